// SPDX-License-Identifier: GPL-2.0
/*
 * A program for tests/run to put into synthetic traces.  It is never run:
 * its addresses are symbolized and its code decoded.  The code whose bytes
 * matter is in prog-asm.S (built without debug information), and the
 * lines tests/run looks for are marked "@name".
 */

int leaf(int x) { return x + 1; }			/* @leaf */

void on_signal(int sig) { (void)sig; }			/* @on_signal */

/* Names as C++ and Rust (legacy and v0 manglings) give them. */
void cxx_fn(int x) __asm__("_ZN3foo3barEi");
void cxx_fn(int x) { (void)x; }	/* @cxx_fn */
void rust_legacy_fn(void)
	__asm__("_ZN4core3fmt5write17h0123456789abcdefE");
void rust_legacy_fn(void) { }
void rust_v0_fn(void)
	__asm__("_RNvNtCs1234_7mycrate3foo3bar");
void rust_v0_fn(void) { }

void tramp(void);
int getpid(void);

int main(void)
{							/* @main */
	tramp();
	return leaf(getpid());
}
