// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for `bts-dump -i`: the raw file reader and the printer
 * it feeds (symbols, decoding, every output but raw) on arbitrary bytes, through the very functions bts-dump uses.  fuzz/run
 * builds and runs it.
 */
#include <stdlib.h>

#include "../bts-dump.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull || decode_init())
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	static const struct print_opts opts[] = {
		{ .format = FORMAT_TEXT, .show_maps = true },
		{ .format = FORMAT_JSONL, .show_maps = true },
		{ .format = FORMAT_TEXT, .calls = true },
		{ .format = FORMAT_TEXT, .insn = true },
		{ .format = FORMAT_FOLDED },
		{ .format = FORMAT_CHROME },
		{ .format = FORMAT_PERF },
		{ .format = FORMAT_PT },
	};
	struct printer *pr;
	size_t i;
	FILE *in;

	for (i = 0; i < ARRAY_SIZE(opts); i++) {
		in = fmemopen((void *)data, size, "rb");
		if (!in)
			abort();
		pr = printer_new(devnull, &opts[i]);
		raw_read(in, "fuzz", printer_sink(pr), NULL);
		printer_finish(pr);
		printer_free(pr);
		fclose(in);
	}
	return 0;
}
