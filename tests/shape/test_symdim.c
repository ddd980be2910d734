/* Symbolic dims (shape/symdim.h): the canonical form, arithmetic that proves
** equalities, and the limits where it gives up instead of guessing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shape/symdim.h"

/* Render p and compare with want. */
static void assert_form(const sym_poly *p, const char *want) {
    char buf[128];
    size_t n = sym_render(p, buf, sizeof buf);
    assert_true(n > 0);
    assert_string_equal(buf, want);
}

static sym_poly parse(const char *s) {
    sym_poly p;
    assert_true(sym_parse(s, &p));
    return p;
}

typedef enum { ADD, SUB, MUL, DIV } op;

/* An operand: a number as shape values hold them, else a dim name. */
static sym_poly operand(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end) {
        sym_poly p;
        sym_const(v, &p);
        return p;
    }
    return parse(s);
}

/* Apply op to a and b, compare the canonical result (NULL: must fail). */
static void check(const char *a, op o, const char *b, const char *want) {
    sym_poly pa = operand(a), pb = operand(b), r;
    bool ok = o == ADD ? sym_add(&pa, &pb, 1, &r)
            : o == SUB ? sym_add(&pa, &pb, -1, &r)
            : o == MUL ? sym_mul(&pa, &pb, &r)
                       : sym_div(&pa, &pb, &r);
    if (!want) {
        assert_false(ok);
        return;
    }
    assert_true(ok);
    assert_form(&r, want);
}

static void symdim_should_write_one_canonical_form(void **state) {
    (void)state;
    sym_poly p = parse("N*2 + M*N + 1 - 3");
    assert_form(&p, "M*N + 2*N - 2");
    p = parse("batch");
    assert_form(&p, "batch");
    p = parse("-x + y");
    assert_form(&p, "-x + y");
    /* a name without the operators' spaces is one name */
    p = parse("a+b");
    assert_form(&p, "a+b");
    /* a name that reads as a number is still a name */
    p = parse("12");
    int64_t v;
    assert_false(sym_is_const(&p, &v));
    assert_form(&p, "12");
}

static void symdim_should_prove_what_exporters_compute(void **state) {
    (void)state;
    check("N", MUL, "4", "4*N");
    check("4*N", DIV, "N", "4");
    check("4*N", DIV, "4", "N");
    check("N*T", DIV, "T", "N");
    check("N + 1", SUB, "1", "N");
    check("N", ADD, "N", "2*N");
    check("N", SUB, "N", "0");
    check("N + M", DIV, "M + N", "1");
    check("2*N + 4", DIV, "2", "N + 2");
    check("N + 1", MUL, "N - 1", "N*N - 1");
    sym_poly a = parse("8*batch"), b = parse("batch"), q;
    int64_t v;
    assert_true(sym_div(&a, &b, &q));
    assert_true(sym_is_const(&q, &v));
    assert_int_equal(v, 8);
}

static void symdim_should_refuse_what_it_cannot_prove(void **state) {
    (void)state;
    check("N", DIV, "2", NULL);         /* floor(N/2) is no polynomial */
    check("N + 1", DIV, "N", NULL);
    check("N", DIV, "M", NULL);
    check("N", DIV, "0", NULL);
    check("a*b*c*d*e*f", MUL, "g", NULL); /* more factors than a term holds */
    sym_poly p, big, n = parse("N"), two, r;
    sym_const(INT64_C(1) << 62, &big);
    sym_const(2, &two);
    assert_true(sym_mul(&big, &n, &p));
    assert_false(sym_mul(&p, &two, &r)); /* the coefficient overflows */
    assert_false(sym_parse("a + b + c + d + e + f + g + h + i", &p));
    assert_false(sym_parse("", &p));
}

static void symdim_should_report_a_buffer_too_small(void **state) {
    (void)state;
    sym_poly p = parse("2*N + M");
    char buf[5];
    assert_int_equal(sym_render(&p, buf, sizeof buf), 0);
}

/* Whatever a model names its dims, parsing never crashes, and what renders
** parses back to the same form. */
static void symdim_should_survive_hostile_names_and_round_trip(void **state) {
    (void)state;
    const char *names[] = {"*", "**", "a**b", " + ", " - ", "- ", "-", " +  + ", "a +",
                           "+ a", "a - - b", "0*N", "N*0 + 1", "99999999999999999999*N",
                           "2*3*4*5*6*7*8*9*10*11*12*13*14*15*16*17*18*19*20*21*22*N",
                           "N - N", "a b c", "\xff\xfe", "N + 1 - 1"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        sym_poly p, q;
        char a[128], b[128];
        if (!sym_parse(names[i], &p)) continue;
        size_t n = sym_render(&p, a, sizeof a);
        if (!n) continue;
        /* a name that is "0" after cancelling renders as the number it became */
        int64_t v;
        if (sym_is_const(&p, &v)) continue;
        assert_true(sym_parse(a, &q));
        assert_true(sym_render(&q, b, sizeof b) > 0);
        assert_string_equal(a, b);
    }
    /* random arithmetic over a few names round-trips too */
    const char *atoms[] = {"N", "M", "seq_len", "2", "3"};
    unsigned seed = 1;
    for (int k = 0; k < 2000; k++) {
        sym_poly x, y, r;
        seed = seed * 1103515245u + 12345u;
        sym_parse(atoms[(seed >> 16) % 3], &x);
        for (int step = 0; step < 4; step++) {
            seed = seed * 1103515245u + 12345u;
            const char *at = atoms[(seed >> 16) % 5];
            if (at[0] >= '0' && at[0] <= '9') sym_const(at[0] - '0', &y);
            else sym_parse(at, &y);
            bool ok = (seed >> 8) % 3 == 0 ? sym_add(&x, &y, 1, &r)
                    : (seed >> 8) % 3 == 1 ? sym_add(&x, &y, -1, &r)
                                           : sym_mul(&x, &y, &r);
            if (ok) x = r;
        }
        char a[128], b[128];
        int64_t v;
        if (!sym_render(&x, a, sizeof a) || sym_is_const(&x, &v)) continue;
        sym_poly q;
        assert_true(sym_parse(a, &q));
        assert_true(sym_render(&q, b, sizeof b) > 0);
        assert_string_equal(a, b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(symdim_should_write_one_canonical_form),
        cmocka_unit_test(symdim_should_prove_what_exporters_compute),
        cmocka_unit_test(symdim_should_refuse_what_it_cannot_prove),
        cmocka_unit_test(symdim_should_report_a_buffer_too_small),
        cmocka_unit_test(symdim_should_survive_hostile_names_and_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
