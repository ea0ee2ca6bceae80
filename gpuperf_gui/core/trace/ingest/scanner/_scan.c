/* Trace events -> columns in one pass over the JSON text (the streamed decoder's fast path).
 *
 * scan(buf, end) reads buf[:end], a JSON list of Chrome trace events as the streamed decoder cuts
 * it ("[" event, event, ... "]"), and returns the columns of its complete ("X") events, the spans
 * of its B/E/M events (decoded by msgspec in Python) and how many entries the list holds; other
 * phases are skipped, as the msgspec structs of core/trace/decode.py skip them.
 *
 * It accepts only what the typed msgspec decoder accepts and reads it to the same values: on
 * anything it does not handle exactly (a syntax error, a field of an unexpected type, an escape
 * in a key, a \u escape in a string it keeps, a number out of int64 range, a duplicate field,
 * nesting deeper than MAX_DEPTH, invalid UTF-8 in a kept string, a key lookup past MAX_PROBES:
 * names crafted to collide) it returns None and the caller decodes the run with msgspec,
 * which then accepts, repairs or refuses it as before. The scan itself runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define MAX_DEPTH 256

typedef struct { const unsigned char *p, *end; } Cur;

enum { T_NONE = 0, T_STR, T_INT, T_FLT, T_NULL, T_OTHER, T_OBJ };

typedef struct {
    const unsigned char *start, *stop; /* the value's text; for strings: the content (no quotes) */
    int type;
    int escaped;                       /* a string with backslash escapes */
    int high;                          /* a string with bytes >= 0x80 */
} Tok;

/* ---- growable column buffers ---------------------------------------------------------------- */
typedef struct { char *data; size_t len, cap; } Buf;

static int buf_grow(Buf *b, size_t more) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + more) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d; b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *v, size_t n) {
    if (b->len + n > b->cap && buf_grow(b, n)) return -1;
    memcpy(b->data + b->len, v, n);
    b->len += n;
    return 0;
}

/* ---- interning: key text -> dense code in order of first appearance -------------------------- */
typedef struct { const unsigned char *text; size_t len; } Span;

typedef struct {
    const unsigned char *text; size_t len; /* a string key: its text in the input */
    int64_t ival; int is_int;
    uint64_t hash; int32_t code; int used;
    Span more[2];                          /* a shape key: its second and third parts */
} Slot;

typedef struct {
    Slot *slots; size_t cap, count;
    Slot **order;          /* slots by code */
    size_t order_cap;
    size_t longest;        /* the most slots one lookup probed */
    int flooded;           /* a lookup passed MAX_PROBES: the run goes to msgspec */
} Table;

static inline uint64_t load8(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Hash flooding: names crafted to collide would make interning quadratic (40k names measured 2.65 s
 * against 0.05 s random, with the unseeded hash this scanner had). So the hash is keyed by a secret
 * drawn per process (module init, os.urandom) and finished by murmur3's fmix64, and no lookup probes
 * more than MAX_PROBES slots: a run that would is handed back to msgspec (stats() counts them). At a
 * load factor of at most 1/2, a run of 128 used slots with a random hash has odds ~1e-11 per slot. */
#define MAX_PROBES 128
static uint64_t SEED0 = 0x243F6A8885A308D3ULL, SEED1 = 0x13198A2E03707344ULL;
static Py_ssize_t probe_fallbacks = 0;  /* runs handed back for MAX_PROBES (under the GIL) */
static size_t longest_probe = 0;        /* the most slots one lookup probed, over all runs */

static inline uint64_t fmix64(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t hash_bytes(const unsigned char *s, size_t n) {  /* a word at a time: names are long */
    uint64_t h = SEED0 ^ (n * 0x9E3779B97F4A7C15ULL);
    for (; n >= 8; s += 8, n -= 8) { h = (h ^ load8(s)) * 0xff51afd7ed558ccdULL; h ^= h >> 32; }
    if (n) { uint64_t w = 0; memcpy(&w, s, n); h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL; }
    return fmix64(h ^ SEED1);
}

static uint64_t hash_int(int64_t v) {
    return fmix64((uint64_t)v ^ SEED1) | 1ULL << 63; /* ints and strings never compare equal: is_int checked too */
}

static int table_grow(Table *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    Slot *slots = calloc(cap, sizeof(Slot));
    if (!slots) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].used) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].used) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        t->order[slots[j].code] = &slots[j];
    }
    free(t->slots);
    t->slots = slots; t->cap = cap;
    return 0;
}

/* A new key in the free slot ``j``: its code, or -1 on memory failure. */
static int32_t table_insert(Table *t, size_t j, uint64_t h, const unsigned char *text, size_t len, int64_t ival,
                            int is_int) {
    if (t->count >= t->order_cap) {
        size_t cap = t->order_cap ? t->order_cap * 2 : 256;
        Slot **o = realloc(t->order, cap * sizeof(Slot *));
        if (!o) return -1;
        t->order = o; t->order_cap = cap;
    }
    Slot *s = &t->slots[j];
    s->text = text; s->len = len; s->ival = ival; s->is_int = is_int;
    s->hash = h; s->code = (int32_t)t->count; s->used = 1;
    t->order[t->count++] = s;
    return s->code;
}

/* Code of a key (a string's bytes, or an int); -1 on memory failure. */
static int32_t table_code(Table *t, const unsigned char *text, size_t len, int64_t ival, int is_int) {
    if ((t->count + 1) * 2 > t->cap && table_grow(t)) return -1;
    uint64_t h = is_int ? hash_int(ival) : hash_bytes(text, len);
    size_t j = h & (t->cap - 1), probes = 0;
    while (t->slots[j].used) {
        Slot *s = &t->slots[j];
        if (++probes > MAX_PROBES) { t->flooded = 1; return -1; }
        if (s->hash == h && s->is_int == is_int &&
            (is_int ? s->ival == ival : (s->len == len && memcmp(s->text, text, len) == 0)))
            return s->code;
        j = (j + 1) & (t->cap - 1);
    }
    if (probes > t->longest) t->longest = probes;
    return table_insert(t, j, h, text, len, ival, is_int);
}

static inline int same_span(Span a, Span b) { return a.len == b.len && memcmp(a.text, b.text, a.len) == 0; }

/* Code of a shape key: (input dims, input types, concrete inputs) as written; -1 on memory failure. */
static int32_t shape_code(Table *t, const Span parts[3]) {
    if ((t->count + 1) * 2 > t->cap && table_grow(t)) return -1;
    uint64_t h = hash_bytes(parts[0].text, parts[0].len);
    h = (h ^ hash_bytes(parts[1].text, parts[1].len)) * 0x9E3779B97F4A7C15ULL;
    h = (h ^ hash_bytes(parts[2].text, parts[2].len)) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    size_t j = h & (t->cap - 1), probes = 0;
    while (t->slots[j].used) {
        Slot *s = &t->slots[j];
        if (++probes > MAX_PROBES) { t->flooded = 1; return -1; }
        if (s->hash == h && same_span((Span){s->text, s->len}, parts[0]) && same_span(s->more[0], parts[1])
            && same_span(s->more[1], parts[2]))
            return s->code;
        j = (j + 1) & (t->cap - 1);
    }
    if (probes > t->longest) t->longest = probes;
    int32_t code = table_insert(t, j, h, parts[0].text, parts[0].len, 0, 0);
    if (code >= 0) { t->slots[j].more[0] = parts[1]; t->slots[j].more[1] = parts[2]; }
    return code;
}

static void table_free(Table *t) {
    free(t->slots); free(t->order);
    memset(t, 0, sizeof(*t));
}

/* ---- the JSON grammar ------------------------------------------------------------------------ */
static inline void skip_ws(Cur *c) {
    if (c->p < c->end && *c->p > ' ') return;
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* The lowest byte flagged is the first zero byte (higher flags may be borrows). */
static inline uint64_t has_zero(uint64_t v) { return (v - ONES) & ~v & HIGHS; }

/* The bytes of ``v`` that end a plain string: a quote, a backslash, a control or a high byte (the
 * lowest flag is exact; higher ones may be borrows). */
static inline uint64_t string_stops(uint64_t v) {
    return has_zero(v ^ (ONES * '"')) | has_zero(v ^ (ONES * '\\')) | ((v - ONES * 0x20) & ~v & HIGHS) | (v & HIGHS);
}

static inline int is_hex(unsigned char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* After the opening quote: to just past the closing one. The content span, whether it has
 * escapes or bytes >= 0x80. Control characters and malformed escapes fail (msgspec rejects them);
 * a \u escape sets *unicode (msgspec checks surrogates even in values it skips: its call). */
static int scan_string(Cur *c, Tok *t, int *unicode) {
    const unsigned char *p = c->p, *end = c->end;
    t->start = p; t->escaped = 0; t->high = 0; t->type = T_STR;
    for (;;) {
        while (p + 8 <= end) {  /* 8 bytes at a time to the first '"', '\\', control or high byte */
            uint64_t m = string_stops(load8(p));
            if (m) { p += __builtin_ctzll(m) >> 3; goto special; }
            p += 8;
        }
        while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80) p++;
        if (p >= end) return -1;
special:
        if (*p == '"') break;
        if (*p >= 0x80) { t->high = 1; p++; continue; }
        if (*p < 0x20) return -1;
        /* backslash */
        t->escaped = 1;
        if (p + 1 >= end) return -1;
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p += 2; break;
        case 'u':
            if (p + 6 > end || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) return -1;
            *unicode = 1; p += 6; break;
        default:
            return -1;
        }
    }
    t->stop = p;
    c->p = p + 1;
    return 0;
}

/* A key after its opening quote: most are plain ASCII of at most 15 bytes, read from two words here
 * (the first byte that stops a string is the quote); the rest by scan_string. */
static inline int scan_key(Cur *c, Tok *k, int *unicode) {
    const unsigned char *p = c->p;
    if (p + 16 <= c->end) {
        uint64_t m = string_stops(load8(p));
        unsigned at = 0;
        if (!m) { m = string_stops(load8(p + 8)); at = 8; }
        if (m) {
            const unsigned char *q = p + at + ((unsigned)__builtin_ctzll(m) >> 3);
            if (*q == '"') {
                k->start = p; k->stop = q; k->type = T_STR; k->escaped = 0; k->high = 0;
                c->p = q + 1;
                return 0;
            }
        }
    }
    return scan_string(c, k, unicode);
}

#define DIGIT(ch) ((unsigned)((ch) - '0') < 10u)

/* A JSON number: grammar checked; T_INT or T_FLT. A run ends with ']' (scan checks it first), so
 * the digit loops stop there at the latest: no bounds check per byte. (A word-at-a-time digit count
 * measured slower: most numbers are short.) */
static inline int scan_number(Cur *c, Tok *t) {
    const unsigned char *p = c->p;
    int is_float = 0;
    t->start = p;
    p += *p == '-';
    if (*p == '0') p++;
    else if (DIGIT(*p)) { do p++; while (DIGIT(*p)); }
    else return -1;
    if (*p == '.') {
        p++; is_float = 1;
        if (!DIGIT(*p)) return -1;
        do p++; while (DIGIT(*p));
    }
    if ((*p | 0x20) == 'e') {
        p++; is_float = 1;
        p += *p == '+' || *p == '-';
        if (!DIGIT(*p)) return -1;
        do p++; while (DIGIT(*p));
    }
    t->stop = p;
    t->type = is_float ? T_FLT : T_INT;
    c->p = p;
    return 0;
}

static int match_literal(Cur *c, const char *word, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
    c->p += n;
    return 0;
}

static int skip_value(Cur *c, int depth, int *unicode);

static inline int arg_index(const Tok *k);
static int scan_value(Cur *c, Tok *t, int depth, int *unicode);

/* An object's members, after its '{'. ``args``: where the kept args' values go (their keys must be
 * plain; a duplicate is msgspec's call), or NULL to check and skip every member. */
static int scan_object(Cur *c, int depth, int *unicode, Tok *args) {
    Tok k;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 0; }
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"') return -1;
        c->p++;
        if (scan_key(c, &k, unicode) || (args && (k.escaped || k.high))) return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        int i = args ? arg_index(&k) : -1;
        if (i < 0) {
            if (skip_value(c, depth + 1, unicode)) return -1;
        } else {
            if (args[i].type != T_NONE) return -1;
            if (scan_value(c, &args[i], depth + 1, unicode)) return -1;
        }
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == '}') { c->p++; return 0; }
        return -1;
    }
}

static int skip_array(Cur *c, int depth, int *unicode) {  /* after '[' */
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return 0; }
    for (;;) {
        if (skip_value(c, depth + 1, unicode)) return -1;
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == ']') { c->p++; return 0; }
        return -1;
    }
}

/* Any JSON value, checked; the token says its type and text. */
static int scan_value(Cur *c, Tok *t, int depth, int *unicode) {
    if (depth > MAX_DEPTH) return -1;
    skip_ws(c);
    if (c->p >= c->end) return -1;
    t->start = c->p; t->escaped = 0;
    switch (*c->p) {
    case '"':
        c->p++;
        return scan_string(c, t, unicode);
    case '{':
        c->p++; t->type = T_OTHER;
        if (scan_object(c, depth, unicode, NULL)) return -1;
        break;
    case '[':
        c->p++; t->type = T_OTHER;
        if (skip_array(c, depth, unicode)) return -1;
        break;
    case 't': t->type = T_OTHER; if (match_literal(c, "true", 4)) return -1; break;
    case 'f': t->type = T_OTHER; if (match_literal(c, "false", 5)) return -1; break;
    case 'n': t->type = T_NULL; if (match_literal(c, "null", 4)) return -1; break;
    default:
        return scan_number(c, t);
    }
    t->stop = c->p;
    return 0;
}

static int skip_value(Cur *c, int depth, int *unicode) {  /* numbers and strings without a call */
    Tok t;
    if (depth > MAX_DEPTH) return -1;
    skip_ws(c);
    if (c->p >= c->end) return -1;
    unsigned char ch = *c->p;
    if (DIGIT(ch) || ch == '-') return scan_number(c, &t);
    if (ch == '"') { c->p++; return scan_string(c, &t, unicode); }
    return scan_value(c, &t, depth, unicode);
}

/* ---- the fields kept ------------------------------------------------------------------------- */
enum { F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS, N_FIELDS };
enum { A_EXT, A_EXT_2021, A_CORR, A_STREAM, A_DEVICE, A_BYTES, A_FLOPS, A_DIMS, A_TYPES, A_CONCRETE,
       A_NAME, N_ARGS };

#define IS(lit) (len == sizeof(lit) - 1 && memcmp(t, lit, sizeof(lit) - 1) == 0)  /* inlined: constant size */

/* The F_ index of an event key, or -1 (compares, not a switch: its jump table mispredicts). */
static inline int field_index(const Tok *k) {
    const unsigned char *t = k->start;
    size_t len = (size_t)(k->stop - k->start);
    if (len == 2) return IS("ph") ? F_PH : IS("ts") ? F_TS : -1;
    if (len == 3) return IS("cat") ? F_CAT : IS("pid") ? F_PID : IS("tid") ? F_TID : IS("dur") ? F_DUR : -1;
    if (len == 4) return IS("name") ? F_NAME : IS("args") ? F_ARGS : -1;
    return -1;
}

/* The A_ index of an args key, or -1. */
static inline int arg_index(const Tok *k) {
    const unsigned char *t = k->start;
    size_t len = (size_t)(k->stop - k->start);
    if (len == 11) return IS("External id") ? A_EXT : IS("external id") ? A_EXT_2021 : IS("correlation") ? A_CORR : -1;
    if (len < 4 || len > 15) return -1;
    if (len == 4) return IS("name") ? A_NAME : -1;
    if (len == 5) return IS("bytes") ? A_BYTES : IS("flops") ? A_FLOPS : -1;
    if (len == 6) return IS("stream") ? A_STREAM : IS("device") ? A_DEVICE : -1;
    if (len == 10) return IS("Input Dims") ? A_DIMS : IS("Input type") ? A_TYPES : -1;
    if (len == 15) return IS("Concrete Inputs") ? A_CONCRETE : -1;
    return -1;
}

/* Phases decoded into empty structs (decode.py _SKIPPED_PHASES). */
static const char SKIPPED_PHASES[] = "iIsftCbenSTpFPNODRcVv";

/* ---- numbers as msgspec reads them ------------------------------------------------------------ */
static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* An int token as int64; -1 when it does not fit. */
static int token_int64(const Tok *t, int64_t *out) {
    const unsigned char *p = t->start;
    int neg = 0;
    uint64_t v = 0;
    if (*p == '-') { neg = 1; p++; }
    if (t->stop - p > 19) return -1;  /* 19 digits fit a uint64: no overflow below */
    for (; p < t->stop; p++) v = v * 10 + (uint64_t)(*p - '0');
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        *out = (v == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
    }
    return 0;
}

/* A number token as a correctly rounded double; -1 when out of range (msgspec refuses those) or
 * when it cannot be read here. Needs no GIL: exact decimal cases by one IEEE operation (Clinger's
 * fast path), the rest through strtod on a copy (glibc's is correctly rounded; the C locale is the
 * process's numeric locale, Python never changes it). */
static int token_double(const Tok *t, double *out) {
    if (t->type == T_INT) {
        int64_t v;
        if (token_int64(t, &v) == 0) { *out = (double)v; return 0; }
    }
    const unsigned char *p = t->start;
    int neg = 0, digits = 0, exp10 = 0;
    uint64_t mant = 0;
    if (*p == '-') { neg = 1; p++; }
    while (p < t->stop && *p >= '0' && *p <= '9') {
        if (mant || *p != '0') digits++;
        mant = mant * 10 + (uint64_t)(*p - '0');
        if (digits > 19) goto slow;
        p++;
    }
    if (p < t->stop && *p == '.') {
        p++;
        while (p < t->stop && *p >= '0' && *p <= '9') {
            if (mant || *p != '0') digits++;
            mant = mant * 10 + (uint64_t)(*p - '0');
            exp10--;
            if (digits > 19) goto slow;
            p++;
        }
    }
    if (p < t->stop) goto slow;  /* an exponent */
    if (mant <= (1ULL << 53) && exp10 >= -22) {
        double d = (double)mant;
        d = exp10 < 0 ? d / POW10[-exp10] : d;
        *out = neg ? -d : d;
        return 0;
    }
slow: {
        char tmp[400];
        size_t n = (size_t)(t->stop - t->start);
        if (n >= sizeof(tmp)) return -1;
        memcpy(tmp, t->start, n);
        tmp[n] = 0;
        char *endp;
        double d = strtod(tmp, &endp);
        if ((size_t)(endp - tmp) != n || isinf(d)) return -1;
        *out = d;
        return 0;
    }
}

/* ---- the columns of one run ------------------------------------------------------------------ */
enum { C_CAT, C_NAME, C_PID, C_TID, C_TS, C_DUR, C_CORR, C_EXT, C_EXT_2021, C_FLOPS, C_BYTES, C_DEVICE,
       C_STREAM, C_SHAPE, N_COLS };

typedef struct {
    Buf cols[N_COLS];
    Buf rest;                 /* (start, stop) offsets of B/E/M events, int64 pairs */
    Table cats, names, pids, tids, shapes;
    Py_ssize_t entries, xs;
    const unsigned char *base;
} Run;

static void run_free(Run *r) {
    for (int i = 0; i < N_COLS; i++) free(r->cols[i].data);
    free(r->rest.data);
    table_free(&r->cats); table_free(&r->names); table_free(&r->pids); table_free(&r->tids);
    table_free(&r->shapes);
}

/* A kept string's code, keyed by its text as written (an escaped one is unescaped in Python:
 * ``escaped`` lists them; two spellings of one string get two codes that map to one id there). */
static int32_t string_code(Table *t, const Tok *tok) {
    return table_code(t, tok->start, (size_t)(tok->stop - tok->start), 0, 0);
}

static int32_t id_code(Table *t, const Tok *tok, int present) {
    if (!present) return table_code(t, NULL, 0, 0, 1);
    if (tok->type == T_INT) {
        int64_t v;
        if (token_int64(tok, &v)) return -2;
        return table_code(t, NULL, 0, v, 1);
    }
    if (tok->type == T_STR) return string_code(t, tok);
    return -2;
}

static int put_f64(Run *r, int col, double v) { return buf_put(&r->cols[col], &v, sizeof v); }
static int put_i64(Run *r, int col, int64_t v) { return buf_put(&r->cols[col], &v, sizeof v); }
static int put_i32(Run *r, int col, int32_t v) { return buf_put(&r->cols[col], &v, sizeof v); }

/* A float field: absent -> default; int or float -> its double; else refused (-1). */
static int float_field(const Tok *t, double dflt, double *out) {
    if (t->type == T_NONE) { *out = dflt; return 0; }
    if (t->type != T_INT && t->type != T_FLT) return -1;
    return token_double(t, out);
}

/* An int field: absent -> -1; an int within int64 -> it; else refused. */
static int int_field(const Tok *t, int64_t *out) {
    if (t->type == T_NONE) { *out = -1; return 0; }
    if (t->type != T_INT) return -1;
    return token_int64(t, out);
}

/* ``int | str`` args (stream, device) as numbers: absent -1; an int; a string is left to msgspec. */
static int int_or_str_number(const Tok *t, double *out) {
    if (t->type == T_NONE) { *out = -1.0; return 0; }
    if (t->type != T_INT) return -1;
    int64_t v;
    if (token_int64(t, &v)) return -1;
    *out = (double)v;
    return 0;
}

static int emit_x(Run *r, const Tok *f, const Tok *a) {
    int32_t cat, name, pid, tid;
    double ts, dur, flops, bytes, device, stream;
    int64_t corr, ext, ext_2021;
    int32_t shape = -1;
    if (f[F_CAT].type == T_NONE) cat = table_code(&r->cats, (const unsigned char *)"", 0, 0, 0);
    else if (f[F_CAT].type == T_STR) cat = string_code(&r->cats, &f[F_CAT]);
    else return -1;
    if (f[F_NAME].type == T_NONE) name = table_code(&r->names, (const unsigned char *)"", 0, 0, 0);
    else if (f[F_NAME].type == T_STR) name = string_code(&r->names, &f[F_NAME]);
    else return -1;
    pid = id_code(&r->pids, &f[F_PID], f[F_PID].type != T_NONE);
    tid = id_code(&r->tids, &f[F_TID], f[F_TID].type != T_NONE);
    if (cat < 0 || name < 0 || pid < 0 || tid < 0) return -1;
    if (float_field(&f[F_TS], NAN, &ts) || float_field(&f[F_DUR], 0.0, &dur)) return -1;
    if (int_field(&a[A_EXT], &ext) || int_field(&a[A_EXT_2021], &ext_2021) || int_field(&a[A_CORR], &corr))
        return -1;
    if (float_field(&a[A_FLOPS], -1.0, &flops) || float_field(&a[A_BYTES], -1.0, &bytes)) return -1;
    if (int_or_str_number(&a[A_STREAM], &stream) || int_or_str_number(&a[A_DEVICE], &device)) return -1;
    if (a[A_NAME].type != T_NONE && a[A_NAME].type != T_STR && a[A_NAME].type != T_NULL) return -1;
    if (a[A_NAME].type == T_STR && a[A_NAME].high) return -1;  /* msgspec checks its UTF-8: its call */
    if (a[A_DIMS].type != T_NONE) {  /* the shape as written (msgspec.Raw): absent parts empty */
        Span parts[3];
        for (int i = 0; i < 3; i++) {
            const Tok *t = &a[A_DIMS + i];
            int quoted = t->type == T_STR;  /* a Raw string keeps its quotes */
            parts[i].text = t->type == T_NONE ? (const unsigned char *)"" : t->start - quoted;
            parts[i].len = t->type == T_NONE ? 0 : (size_t)(t->stop - t->start) + 2 * quoted;
        }
        if ((shape = shape_code(&r->shapes, parts)) < 0) return -1;
    }
    if (put_i32(r, C_CAT, cat) || put_i32(r, C_NAME, name) || put_i32(r, C_PID, pid) || put_i32(r, C_TID, tid)
        || put_f64(r, C_TS, ts) || put_f64(r, C_DUR, dur) || put_i64(r, C_CORR, corr) || put_i64(r, C_EXT, ext)
        || put_i64(r, C_EXT_2021, ext_2021) || put_f64(r, C_FLOPS, flops) || put_f64(r, C_BYTES, bytes)
        || put_f64(r, C_DEVICE, device) || put_f64(r, C_STREAM, stream) || put_i32(r, C_SHAPE, shape))
        return -1;
    r->xs++;
    return 0;
}

/* One event (at '{'). */
static int scan_event(Run *r, Cur *c) {
    Tok f[N_FIELDS], a[N_ARGS], k;
    int unicode = 0;
    const unsigned char *start = c->p;
    for (int i = 0; i < N_FIELDS; i++) f[i].type = T_NONE;  /* types only: a memset costs 20 % */
    for (int i = 0; i < N_ARGS; i++) a[i].type = T_NONE;
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') return -1;  /* no ph: msgspec refuses */
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"') return -1;
        c->p++;
        if (scan_key(c, &k, &unicode) || k.escaped || k.high) return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        int i = field_index(&k);
        if (i < 0) {
            if (skip_value(c, 2, &unicode)) return -1;
        } else if (f[i].type != T_NONE) {
            return -1;  /* a duplicate key */
        } else if (i == F_ARGS) {
            skip_ws(c);
            if (c->p < c->end && *c->p == '{') {
                f[i].type = T_OBJ; f[i].start = c->p;
                c->p++;
                if (scan_object(c, 2, &unicode, a)) return -1;
                f[i].stop = c->p;
            } else if (scan_value(c, &f[i], 2, &unicode)) {
                return -1;
            }
        } else if (scan_value(c, &f[i], 2, &unicode)) {
            return -1;
        }
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == '}') { c->p++; break; }
        return -1;
    }
    r->entries++;
    if (unicode) return -1;  /* a \u escape anywhere in the event: msgspec reads it */
    const Tok *ph = &f[F_PH];
    if (ph->type != T_STR || ph->escaped || ph->stop - ph->start != 1) return -1;
    unsigned char phase = ph->start[0];
    if (phase == 'X') {
        if (f[F_ARGS].type != T_NONE && f[F_ARGS].type != T_OBJ) return -1;
        return emit_x(r, f, a);
    }
    if (phase == 'B' || phase == 'E' || phase == 'M') {
        int64_t span[2] = {(int64_t)(start - r->base), (int64_t)(c->p - r->base)};
        return buf_put(&r->rest, span, sizeof span);
    }
    if (phase && memchr(SKIPPED_PHASES, phase, sizeof SKIPPED_PHASES - 1)) return 0;
    return -1;
}

/* The whole run: '[' events ']' and nothing but whitespace after. */
static int scan_run(Run *r, const unsigned char *text, Py_ssize_t n) {
    Cur c = {text, text + n};
    r->base = text;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '[') return -1;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == ']') {
        c.p++;
    } else {
        for (;;) {
            skip_ws(&c);
            if (scan_event(r, &c)) return -1;
            skip_ws(&c);
            if (c.p >= c.end) return -1;
            if (*c.p == ',') { c.p++; continue; }
            if (*c.p == ']') { c.p++; break; }
            return -1;
        }
    }
    skip_ws(&c);
    return c.p == c.end ? 0 : -1;
}

/* Room for the columns of the events ``text_bytes`` of JSON hold (one allocation per column, not a
 * dozen doublings with their copies and fresh pages); 100 bytes per event is less than any trace's. */
static int reserve_columns(Run *r, size_t text_bytes) {
    static const size_t widths[N_COLS] = {4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4};
    size_t events = text_bytes / 100 + 16;
    for (int i = 0; i < N_COLS; i++)
        if (buf_grow(&r->cols[i], events * widths[i])) return -1;
    return 0;
}

/* ---- results for Python ---------------------------------------------------------------------- */
static PyObject *key_list(Table *t) {
    PyObject *list = PyList_New((Py_ssize_t)t->count);
    if (!list) return NULL;
    for (size_t i = 0; i < t->count; i++) {
        Slot *s = t->order[i];
        PyObject *v;
        if (s->is_int) v = PyLong_FromLongLong(s->ival);
        else v = PyUnicode_DecodeUTF8((const char *)s->text, (Py_ssize_t)s->len, "strict");
        if (!v) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* The shape keys by code: (dims, types, concrete inputs) bytes. */
static PyObject *shape_list(Table *t) {
    PyObject *list = PyList_New((Py_ssize_t)t->count);
    if (!list) return NULL;
    for (size_t i = 0; i < t->count; i++) {
        Slot *s = t->order[i];
        PyObject *v = Py_BuildValue("(y#y#y#)", (const char *)s->text, (Py_ssize_t)s->len,
                                    (const char *)s->more[0].text, (Py_ssize_t)s->more[0].len,
                                    (const char *)s->more[1].text, (Py_ssize_t)s->more[1].len);
        if (!v) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* A column as a bytearray (a copy). Handing the Buf itself to Python (a buffer-owning object) measured
 * worse: the next run's Buf then needs fresh memory, where a copy lets it reuse this one's, hot. */
static PyObject *col_bytes(Buf *b) {
    return PyByteArray_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

/* Strings kept whose text is escaped or not ASCII: the Python side re-reads them (json rules). */
static PyObject *escaped_flags(Table *t) {
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (size_t i = 0; i < t->count; i++) {
        Slot *s = t->order[i];
        if (s->is_int) continue;
        if (memchr(s->text, '\\', s->len)) {
            PyObject *v = PyLong_FromSize_t(i);
            if (!v || PyList_Append(list, v)) { Py_XDECREF(v); Py_DECREF(list); return NULL; }
            Py_DECREF(v);
        }
    }
    return list;
}

/* The run's columns and keys as Python objects; NULL with the exception set on the first failure
 * (each step runs only when the ones before it succeeded: a call with an exception pending is a
 * SystemError, which two invalid UTF-8 strings in one event once raised). */
static PyObject *run_result(Run *r) {
    PyObject *cols = NULL, *cats = NULL, *names = NULL, *pids = NULL, *tids = NULL, *rest = NULL;
    PyObject *escaped = NULL, *shapes = NULL;
    int ok = (cols = PyTuple_New(N_COLS)) != NULL;
    for (int i = 0; ok && i < N_COLS; i++) {
        PyObject *b = col_bytes(&r->cols[i]);
        if (!b) ok = 0;
        else PyTuple_SET_ITEM(cols, i, b);
    }
    ok = ok && (cats = key_list(&r->cats)) && (names = key_list(&r->names)) && (pids = key_list(&r->pids))
         && (tids = key_list(&r->tids)) && (rest = col_bytes(&r->rest)) && (shapes = shape_list(&r->shapes))
         && (escaped = PyTuple_New(4));
    Table *tables[4] = {&r->cats, &r->names, &r->pids, &r->tids};
    for (int i = 0; ok && i < 4; i++) {
        PyObject *e = escaped_flags(tables[i]);
        if (!e) ok = 0;
        else PyTuple_SET_ITEM(escaped, i, e);
    }
    if (!ok) {
        Py_XDECREF(cols); Py_XDECREF(cats); Py_XDECREF(names); Py_XDECREF(pids); Py_XDECREF(tids);
        Py_XDECREF(rest); Py_XDECREF(escaped); Py_XDECREF(shapes);
        return NULL;
    }
    return Py_BuildValue("(nnNNNNNNNN)", r->entries, r->xs, cols, cats, names, pids, tids, rest, escaped, shapes);
}

static PyObject *scan(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *obj;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "On", &obj, &end)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)) return NULL;
    if (end < 0 || end > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "end beyond the buffer");
        return NULL;
    }
    const unsigned char *text = (const unsigned char *)view.buf;
    Py_ssize_t last = end - 1;
    while (last >= 0 && (text[last] == ' ' || text[last] == '\n' || text[last] == '\r' || text[last] == '\t')) last--;
    if (last < 0 || text[last] != ']') {  /* not a run; and scan_number relies on a final ']' */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    Run r;
    memset(&r, 0, sizeof r);
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = reserve_columns(&r, (size_t)end) || scan_run(&r, (const unsigned char *)view.buf, end);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    Table *tables[5] = {&r.cats, &r.names, &r.pids, &r.tids, &r.shapes};
    for (int i = 0; i < 5; i++) {
        if (tables[i]->longest > longest_probe) longest_probe = tables[i]->longest;
        if (tables[i]->flooded) { probe_fallbacks++; break; }
    }
    if (failed) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = run_result(&r);
    if (!result && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);   /* invalid UTF-8 in a kept string: msgspec says so */
    }
done:
    run_free(&r);
    PyBuffer_Release(&view);
    return result;
}

/* stats() -> (runs handed back to msgspec for a lookup past MAX_PROBES, the most slots one lookup
 * probed): for tests and benchmarks of the hash. */
static PyObject *stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args)) {
    return Py_BuildValue("(nn)", probe_fallbacks, (Py_ssize_t)longest_probe);
}

static PyObject *reset_stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args)) {
    probe_fallbacks = 0; longest_probe = 0;
    Py_RETURN_NONE;
}

/* _hash(bytes) -> the keyed hash of a string key (tests craft collisions with it). */
static PyObject *py_hash(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    uint64_t h = hash_bytes((const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, end) -> (entries, xs, columns, cats, names, pids, tids, rest, escaped, shapes) or None.\n\n"
     "buf[:end] is a JSON list of trace events. None when it is not one this scanner reads exactly\n"
     "as the msgspec structs do (the caller then decodes it with msgspec)."},
    {"stats", stats, METH_NOARGS,
     "stats() -> (runs handed back to msgspec because a key lookup passed the probe cap, the most\n"
     "slots one lookup probed), over this process."},
    {"_reset_stats", reset_stats, METH_NOARGS, "Zero the counts of stats() (tests)."},
    {"_hash", py_hash, METH_O, "_hash(bytes) -> the scanner's keyed hash of a string key (tests)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, METHODS};

/* The hash keys: 16 bytes of os.urandom, drawn once per process. */
static int seed_hash(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (!os) return -1;
    PyObject *b = PyObject_CallMethod(os, "urandom", "i", 16);
    Py_DECREF(os);
    if (!b) return -1;
    if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) != 16) { Py_DECREF(b); PyErr_SetString(PyExc_RuntimeError, "urandom"); return -1; }
    memcpy(&SEED0, PyBytes_AS_STRING(b), 8);
    memcpy(&SEED1, PyBytes_AS_STRING(b) + 8, 8);
    Py_DECREF(b);
    return 0;
}

PyMODINIT_FUNC PyInit__scan(void) {
    if (seed_hash()) return NULL;
    return PyModule_Create(&MODULE);
}
