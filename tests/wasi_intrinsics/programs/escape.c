// Tries to leave the preopen (fd 3) with raw WASI calls; prints the errno of each attempt.
#include <stdio.h>
#include <string.h>
#include <wasi/api.h>

static void try_open(const char *path, __wasi_oflags_t oflags) {
    __wasi_fd_t fd;
    __wasi_errno_t err = __wasi_path_open(3, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, path, oflags,
                                          __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_WRITE, 0, 0,
                                          &fd);
    printf("open %s: %d\n", path, err);
}

int main(void) {
    try_open("../secret.txt", 0);
    try_open("sub/../../secret.txt", 0);
    try_open("/secret.txt", 0);
    try_open("../created.txt", __WASI_OFLAGS_CREAT);
    try_open("up/secret.txt", 0);
    try_open("abs", 0);
    try_open("up/created.txt", __WASI_OFLAGS_CREAT);
    printf("mkdir ../made: %d\n", __wasi_path_create_directory(3, "../made"));
    printf("unlink up/secret.txt: %d\n", __wasi_path_unlink_file(3, "up/secret.txt"));
    printf("rename to ../moved: %d\n", __wasi_path_rename(3, "inside.txt", 3, "../moved"));
    printf("symlink to /: %d\n", __wasi_path_symlink("/", 3, "root"));
    printf("link to ../: %d\n", __wasi_path_link(3, 0, "inside.txt", 3, "../linked"));
    printf("open inside: ");
    try_open("sub/../inside.txt", 0);
    return 0;
}
