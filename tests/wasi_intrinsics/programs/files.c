// Exercises files and directories below the preopen given as argv[1]; prints one line per step.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path_buf[512];
static const char *at(const char *root, const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/%s", root, name);
    return path_buf;
}

#define CHECK(cond, what) do { if (!(cond)) { printf("FAIL %s: %s\n", what, strerror(errno)); return 1; } } while (0)

int main(int argc, char **argv) {
    const char *root = argv[1];
    char buf[64] = {0};

    FILE *in = fopen(at(root, "input.txt"), "r");
    CHECK(in, "fopen input");
    CHECK(fgets(buf, sizeof buf, in), "fgets");
    fclose(in);
    printf("read: %s", buf);

    int fd = open(at(root, "out.txt"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0, "create out.txt");
    CHECK(write(fd, "hello world\n", 12) == 12, "write");
    CHECK(lseek(fd, 6, SEEK_SET) == 6, "lseek");
    memset(buf, 0, sizeof buf);
    CHECK(read(fd, buf, 5) == 5, "read");
    printf("after seek: %s\n", buf);
    CHECK(pwrite(fd, "W", 1, 6) == 1, "pwrite");
    memset(buf, 0, sizeof buf);
    CHECK(pread(fd, buf, 11, 0) == 11, "pread");
    printf("pread: %s\n", buf);
    struct stat st;
    CHECK(fstat(fd, &st) == 0, "fstat");
    printf("size: %lld regular: %d\n", (long long)st.st_size, S_ISREG(st.st_mode));
    CHECK(ftruncate(fd, 5) == 0, "ftruncate");
    CHECK(fstat(fd, &st) == 0 && st.st_size == 5, "size after truncate");
    close(fd);

    CHECK(mkdir(at(root, "sub"), 0755) == 0, "mkdir");
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/out.txt", root);
    snprintf(to, sizeof to, "%s/sub/moved.txt", root);
    CHECK(rename(from, to) == 0, "rename out.txt");
    snprintf(to, sizeof to, "%s/sub/hard.txt", root);
    snprintf(from, sizeof from, "%s/sub/moved.txt", root);
    CHECK(link(from, to) == 0, "link");
    CHECK(symlink("moved.txt", at(root, "sub/soft")) == 0, "symlink");
    memset(buf, 0, sizeof buf);
    CHECK(readlink(at(root, "sub/soft"), buf, sizeof buf) == 9, "readlink");
    printf("readlink: %s\n", buf);
    CHECK(stat(at(root, "sub/soft"), &st) == 0 && S_ISREG(st.st_mode), "stat through link");
    CHECK(lstat(at(root, "sub/soft"), &st) == 0 && S_ISLNK(st.st_mode), "lstat link");

    DIR *dir = opendir(at(root, "sub"));
    CHECK(dir, "opendir");
    int entries = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) entries++;
    closedir(dir);
    printf("entries: %d\n", entries);

    CHECK(open(at(root, "missing"), O_RDONLY) < 0 && errno == ENOENT, "ENOENT for missing");
    CHECK(rmdir(at(root, "sub")) < 0 && errno == ENOTEMPTY, "ENOTEMPTY");
    CHECK(unlink(at(root, "sub/soft")) == 0, "unlink link");
    CHECK(unlink(at(root, "sub/hard.txt")) == 0, "unlink hard");
    CHECK(mkdir(at(root, "gone"), 0755) == 0 && rmdir(at(root, "gone")) == 0, "rmdir");
    printf("done\n");
    return 0;
}
