// SPDX-License-Identifier: GPL-2.0
/*
 * Replays a corpus through LLVMFuzzerTestOneInput() without libFuzzer, so
 * that "make check" keeps its regression pass where clang's fuzzer runtime
 * is missing.  Arguments are files or directories of files.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	static uint8_t buf[1 << 20];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 1;
}

int main(int argc, char **argv)
{
	int i, runs = 0;

	for (i = 1; i < argc; i++) {
		struct dirent *de;
		struct stat st;
		char path[4096];
		DIR *d;

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				return 1;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (run_file(path) < 0)
				return 1;
			runs++;
		}
		closedir(d);
	}
	printf("replay: %d inputs, no failure\n", runs);
	return runs ? 0 : 1;
}
