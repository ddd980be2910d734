/*
** What a save needs of the file system (graph/files.c): files that have no name
** until they are complete, extents copied in the kernel, a lock on the output's
** folder, and the record a model keeps of the data files tileopt wrote for it.
** Internal to graph/: load.c reads the record, save.c does the rest.
*/
#ifndef TILEOPT_GRAPH_FILES_H
#define TILEOPT_GRAPH_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/*
** A file being written into a folder. Unnamed (O_TMPFILE) where the file
** system has unnamed files, so a process killed while it writes leaves
** nothing; else a named temporary ".tileopt-XXXXXXXX" beside its target, told
** to the temp hook so a signal handler can remove it.
*/
typedef struct out_file {
    int fd;                  /* -1: none */
    char *tmp;               /* path of the named temporary, NULL when unnamed */
    const char *tmp_name;    /* its last component (inside tmp) */
    graph_temp_fn hook;
    void *hook_user;
} out_file;
#define OUT_FILE_NONE {-1, NULL, NULL, NULL, NULL}

/* Open a new file in dirfd (whose path is dir, for messages and the named
** temporary). what names the file in errors. */
int out_file_open(out_file *f, int dirfd, const char *dir, const char *what,
                  graph_temp_fn hook, void *hook_user, errbuf *err);
/* fsync the complete file. */
int out_file_sync(out_file *f, const char *what, errbuf *err);
/* Name the complete file `name` in dirfd; EEXIST when the name is taken. */
int out_file_link(out_file *f, int dirfd, const char *name, errbuf *err);
/* Put the complete file in place of `name` at once. An unnamed file is first
** linked as `stage` (a name of its own; one left there is removed first), since
** a name cannot be linked over another. */
int out_file_replace(out_file *f, int dirfd, const char *name, const char *stage,
                     errbuf *err);
/* A fresh name .tileopt-XXXXXXXX (random, in 32 bytes), for a link that is
** renamed over its target at once. */
void out_file_random_name(char name[32]);
/* Close, and remove the named temporary if it is still there. */
void out_file_discard(out_file *f, int dirfd);

/* Copy len bytes at src_off of src_fd to dst_fd's position, in the kernel
** (copy_file_range: a reflink where the file system shares extents) or through
** buf (buf_cap bytes) where it cannot; progress(user, n) after each step. A
** source that ends early (it shrank while read) is an error naming src_path. */
int graph_copy_range(int dst_fd, int src_fd, const char *src_path, uint64_t src_off,
                     uint64_t len, uint8_t *buf, size_t buf_cap,
                     void (*progress)(void *user, uint64_t n), void *user, errbuf *err);

/* An exclusive lock on the folder (flock), held while a save puts its files
** in place, so that two saves there see each other's finished state; -1 when
** the file system has no such locks (the save goes on without). */
int dir_lock(int dirfd);
void dir_unlock(int lock);

/*
** The record a model written by tileopt keeps in its metadata_props of the
** external data files tileopt wrote for it, so that a later save to the same
** path may remove them and never a file another model or the user owns:
**   tileopt.data_for        the model's own file name when it was saved
**   tileopt.data_files      the data files tileopt wrote for it, '/'-separated
**                           (a name never holds a '/')
**   tileopt.data_to_remove  only between the two renames of a save: files it
**                           no longer reads and will remove
** The record holds only when data_for is the file's name now (a copy or a
** renamed file makes no claim).
*/
#define DATA_KEY_FOR "tileopt.data_for"
#define DATA_KEY_FILES "tileopt.data_files"
#define DATA_KEY_REMOVE "tileopt.data_to_remove"

typedef struct name_list {
    char **v;
    size_t n, cap;
} name_list;
bool name_list_add(name_list *l, const char *s, size_t len);
bool name_list_has(const name_list *l, const char *s);
void name_list_free(name_list *l);

typedef struct data_record {
    char *data_for;          /* NULL: none */
    name_list files, remove;
} data_record;
/* Take one metadata entry; false when out of memory. */
bool data_record_entry(data_record *r, const char *key, size_t klen, const char *value,
                       size_t vlen);
void data_record_free(data_record *r);
/* The record of the model file `name` in dirfd, zeroed when it has none (no
** such file, not a model, another name); *nlink its link count (0: absent). */
int data_record_read(int dirfd, const char *name, data_record *r, uint64_t *nlink,
                     errbuf *err);

#endif
