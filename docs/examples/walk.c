/* A program to profile (README, "Profiling your own program"; tests/test_user_program.py):
 * walk() reads one long per 64-byte line of a 512 KiB array, eight times over. */
#include <stdlib.h>
#define N (1 << 16)

__attribute__((noinline)) static long walk(const long *a, int n, int reps)
{
	long s = 0;
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < n; i += 8)
			s += a[i];	/* HOT */
	return s;
}

int main(void)
{
	long *a = calloc(N, sizeof *a);
	long s = walk(a, N, 8);
	free(a);
	return (int)(s & 1);
}
