// SPDX-License-Identifier: GPL-2.0
/*
 * C++ names: a method of a class in a namespace, inlined into outer()
 * (--inline); a library function called through the PLT.  Only
 * symbolized, never run.
 */
#include <exception>

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

void __attribute__((noinline)) give_up()
{
	std::terminate();
}

int main(int argc, char **argv)
{
	if (argc > 5)
		give_up();
	return outer(argc);
}
