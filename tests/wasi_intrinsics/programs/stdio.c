// Echoes stdin upper-cased to stdout, reports args and env, and exits with a chosen code.
// usage: stdio EXIT_CODE|trap [ARGS...]
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

int main(int argc, char **argv) {
    int c;
    while ((c = getchar()) != EOF) putchar(toupper(c));
    for (int i = 0; i < argc; i++) printf("arg %d: %s\n", i, argv[i]);
    for (char **e = environ; *e; e++) printf("env: %s\n", *e);
    fprintf(stderr, "to stderr\n");
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "trap") == 0) __builtin_trap();
    return argc > 1 ? atoi(argv[1]) : 0;
}
