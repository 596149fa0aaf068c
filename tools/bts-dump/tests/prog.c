// SPDX-License-Identifier: GPL-2.0
/*
 * A program for tests/run to put into synthetic traces.  It is never run:
 * its addresses are symbolized and its code decoded.  The code whose bytes
 * matter is in prog-asm.S (built without debug information), and the
 * lines tests/run looks for are marked "@name".
 */

int leaf(int x) { return x + 1; }			/* @leaf */

void on_signal(int sig) { (void)sig; }			/* @on_signal */

void tramp(void);
int getpid(void);

int main(void)
{							/* @main */
	tramp();
	return leaf(getpid());
}
