/* Unit tests of graph/save.c's atomic writes: the mode a new file gets, the umask
** left alone while threads save at once, names near NAME_MAX, no leftovers. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "graph/graph.h"
#include "tests/graph/sample.h"

static char *make_dir(void) {
    char tmpl[] = "/tmp/tileopt_save_XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_dir(char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

static void save_should_give_new_files_the_mode_the_umask_allows(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    char *dir = make_dir();
    mode_t old = umask(027);
    char path[4096];
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    errbuf err = {0};
    assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(umask(old), 027); /* still what the caller set */
    assert_int_equal(count_entries(dir), 1);
    graph_model_free(m);
    remove_dir(dir);
}

typedef struct job {
    graph_model *m;
    const char *dir;
    int id, failures;
} job;

static void *save_many(void *arg) {
    job *j = arg;
    for (int i = 0; i < 150; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/t%d_%d.onnx", j->dir, j->id, i % 5);
        errbuf err = {0};
        if (graph_model_save_path(j->m, path, &err) != TILEOPT_OK) j->failures++;
        struct stat st;
        if (stat(path, &st) != 0 || (st.st_mode & 0777) != 0644) j->failures++;
    }
    return NULL;
}

/* Saving reads no process-wide state: with four threads saving at once, every
** file gets 0644 under umask 022 and the umask is 022 afterwards. */
static void save_should_leave_the_umask_alone_while_threads_save(void **state) {
    (void)state;
    char *dir = make_dir();
    mode_t old = umask(022);
    enum { THREADS = 4 };
    job jobs[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (job){load_sample("legacy_tile1.onnx"), dir, t, 0};
        assert_int_equal(pthread_create(&th[t], NULL, save_many, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].failures, 0);
        graph_model_free(jobs[t].m);
    }
    assert_int_equal(umask(old), 022);
    assert_int_equal(count_entries(dir), THREADS * 5); /* no temporary files left */
    remove_dir(dir);
}

static void save_should_write_a_file_whose_name_is_near_name_max(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    char *dir = make_dir();
    char name[251];
    memset(name, 'n', 245);
    memcpy(name + 245, ".onnx", 6);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    errbuf err = {0};
    assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
    assert_int_equal(access(path, R_OK), 0);
    assert_int_equal(count_entries(dir), 1);
    graph_model_free(m);
    remove_dir(dir);
}

static bool has_entry(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* A save whose OUT cannot be written (here OUT is a folder, which rename cannot
** replace) leaves no data file: it had no name yet. Saved again and again, OUT
** keeps one data file, OUT.data, replaced with it. */
static void save_should_replace_out_and_its_data_file_together(void **state) {
    (void)state;
    graph_model *m = load_sample_with_data();
    errbuf err = {0};
    char *dir = make_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/out.onnx", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_not_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
    assert_int_equal(count_entries(dir), 1); /* the folder named OUT, nothing else */
    assert_int_equal(rmdir(path), 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
        assert_int_equal(count_entries(dir), 2);
        assert_true(has_entry(dir, "out.onnx.data"));
    }
    graph_model *back = NULL;
    assert_int_equal(graph_model_load_path(path, NULL, NULL, &back, &err), TILEOPT_OK);
    assert_int_equal(back->n_own_data, 1);
    graph_model_free(back);
    graph_model_free(m);
    remove_dir(dir);
}

/* A data file of OUT's name that no save of OUT wrote is the user's (or
** another model's): refused, left as it was, and OUT not written. */
static void save_should_refuse_a_data_file_it_did_not_write(void **state) {
    (void)state;
    graph_model *m = load_sample_with_data();
    errbuf err = {0};
    char *dir = make_dir();
    char path[4096], data[4096];
    snprintf(path, sizeof path, "%s/out.onnx", dir);
    snprintf(data, sizeof data, "%s/out.onnx.data", dir);
    FILE *f = fopen(data, "w");
    assert_non_null(f);
    fputs("the user's", f);
    fclose(f);
    assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_IO);
    assert_non_null(strstr(err.msg, "no earlier save"));
    assert_int_equal(count_entries(dir), 1);
    struct stat st;
    assert_int_equal(stat(data, &st), 0);
    assert_int_equal(st.st_size, 10);
    m->data_name = "weights.bin"; /* another name goes through */
    assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
    assert_true(has_entry(dir, "weights.bin"));
    assert_int_equal(count_entries(dir), 3);
    graph_model_free(m);
    remove_dir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(save_should_give_new_files_the_mode_the_umask_allows),
        cmocka_unit_test(save_should_leave_the_umask_alone_while_threads_save),
        cmocka_unit_test(save_should_write_a_file_whose_name_is_near_name_max),
        cmocka_unit_test(save_should_replace_out_and_its_data_file_together),
        cmocka_unit_test(save_should_refuse_a_data_file_it_did_not_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
