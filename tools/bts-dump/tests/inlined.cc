// SPDX-License-Identifier: GPL-2.0
/*
 * --inline's C++ names: a method of a class in a namespace, inlined into
 * outer(); only symbolized, never run.
 */
namespace shapes {
struct Square {
	static inline __attribute__((always_inline)) int area(int side)
	{
		volatile int s = side;

		return s * s;
	}
};
} // namespace shapes

extern "C" int ext(int v);

int __attribute__((noinline)) outer(int v)
{
	return shapes::Square::area(v) + ext(v);
}

extern "C" int ext(int v)
{
	return v;
}

int main(int argc, char **argv)
{
	return outer(argc);
}
