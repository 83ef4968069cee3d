/* tracekit's compiled fast path for the common case of a Kineto trace: frame the traceEvents array at
 * event boundaries, and turn a framed run of events straight into Arrow column buffers.
 *
 * It is an accelerator, never an authority. scan() accepts only what it can decode exactly as the
 * Python path does (tracekit/ingestion/columns.py): on anything else (an unknown top-level key, a value
 * of an unexpected type, a number with an exponent or past int64, invalid UTF-8, a lone surrogate,
 * malformed JSON, deep nesting, a duplicate key) it returns None and the Python path decodes those
 * events, or reports what is wrong with them. Both functions release the GIL while they work, so
 * several threads scan several chunks of one file at once.
 *
 *   configure(keys: list[bytes], kinds: list[int])  the typed args (args.py's KINETO_ARGS, in order);
 *                                                    not while a scan runs
 *   frame(buf, pos) -> (cut, next, is_end, events) | None
 *   scan(data: bytes) -> (n, [(validity|None, data, offsets|None, null_count), ...], {ph: n}) | None
 *   stats() -> {"chunks": scanned, "declined": of them, "events": accepted}  since the module loaded
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable buffers ------------------------------------------------------------------------ */
typedef struct { unsigned char *p; size_t n, cap; } Buf;

static int reserve(Buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return 0;
    size_t c = b->cap ? b->cap : 1024;
    while (c < b->n + extra) c *= 2;
    unsigned char *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q; b->cap = c;
    return 0;
}

/* ---- columns ---------------------------------------------------------------------------------- */
enum { T_STR = 0, T_INT = 1, T_F64 = 2 };
enum { V_NONE = 0, V_INT, V_F64, V_STR, V_RAW };  /* staged value of one cell */

typedef struct { int type; Buf data, offsets, valid; int64_t filled, count; } Col;
typedef struct { int kind, seen; int64_t i; double f; const unsigned char *p; size_t len; int esc; } Cell;

/* kinds of typed args, as args.py names them */
enum { K_INT = 0, K_STR, K_FLOAT, K_INT_OR_TEXT, K_EXACT_INT, K_JSON, K_TEXT };

#define MAX_ARGS 128
static long long stat_chunks = 0, stat_declined = 0, stat_events = 0;  /* changed with the GIL held */
static int n_args = 0;
static int arg_kind[MAX_ARGS];
static char *arg_key[MAX_ARGS];
static size_t arg_len[MAX_ARGS];

/* fixed top-level columns, in the events schema's order (event_index and extra are filled in Python) */
enum { C_PH, C_CAT, C_NAME, C_PID, C_TID, C_PID_TEXT, C_TID_TEXT, C_TS, C_DUR, C_ID, C_ID_TEXT, C_BP, C_S,
       C_ARGS0 };
static const int top_types[C_ARGS0] = {T_STR, T_STR, T_STR, T_INT, T_INT, T_STR, T_STR, T_INT, T_INT, T_INT,
                                       T_STR, T_STR, T_STR};

#define MAX_DEPTH 512

typedef struct {
    const unsigned char *s;
    size_t end;
    int ncols;
    Col *cols;
    Cell *cells;
    int64_t rows;
} Scan;

/* ---- JSON primitives (strict; 0 = not accepted) -------------------------------------------------- */
static inline size_t ws(const unsigned char *s, size_t i, size_t end) {
    while (i < end && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    return i;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* s[*i] == '"': the content span and whether it holds escapes; *i moves past the closing quote */
/* one UTF-8 sequence at s[j] (s[j] >= 0x80): its length, or 0 if it is not valid UTF-8 (overlong,
 * a surrogate, past U+10FFFF, cut short) */
static inline size_t utf8_seq(const unsigned char *s, size_t j, size_t end) {
    unsigned char c = s[j];
    if (c >= 0xC2 && c <= 0xDF)
        return j + 1 < end && (s[j + 1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (j + 2 >= end || (s[j + 1] & 0xC0) != 0x80 || (s[j + 2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[j + 1] < 0xA0) return 0;   /* overlong */
        if (c == 0xED && s[j + 1] >= 0xA0) return 0;  /* surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (j + 3 >= end || (s[j + 1] & 0xC0) != 0x80 || (s[j + 2] & 0xC0) != 0x80 || (s[j + 3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[j + 1] < 0x90) return 0;
        if (c == 0xF4 && s[j + 1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* the bytes of w that are '"', '\\', a control character or not ASCII, as their high bits (the lowest
 * set bit marks the first of them exactly) */
static inline uint64_t string_stops(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w;
}

/* s[*i] == '"': the content span and whether it holds escapes; *i moves past the closing quote. The
 * content is checked as it goes: escapes, no control characters, valid UTF-8 (the only place in JSON
 * where bytes past ASCII may be) */
static int string(const unsigned char *s, size_t *i, size_t end, const unsigned char **p, size_t *len, int *esc) {
    size_t j = *i + 1;
    int e = 0;
    while (j < end) {
        while (j + 8 <= end) {  /* plain ASCII, 8 bytes at a time */
            uint64_t w;
            memcpy(&w, s + j, 8);
            uint64_t m = string_stops(w) & HIGHS;
            if (m) { j += (size_t)(__builtin_ctzll(m) >> 3); break; }
            j += 8;
        }
        if (j >= end) break;
        unsigned char c = s[j];
        if (c == '"') {
            *p = s + *i + 1; *len = j - *i - 1; *esc = e; *i = j + 1;
            return 1;
        }
        if (c == '\\') {
            if (j + 1 >= end) return 0;
            unsigned char d = s[j + 1];
            e = 1;
            if (d == 'u') {
                if (j + 5 >= end) return 0;
                for (int k = 2; k < 6; k++) if (hexval(s[j + k]) < 0) return 0;
                j += 6;
            } else if (d == '"' || d == '\\' || d == '/' || d == 'b' || d == 'f' || d == 'n' || d == 'r' || d == 't') {
                j += 2;
            } else {
                return 0;
            }
            continue;
        }
        if (c < 0x20) return 0;
        if (c >= 0x80) {
            size_t n = utf8_seq(s, j, end);
            if (!n) return 0;
            j += n;
            continue;
        }
        j++;
    }
    return 0;
}

/* a JSON number at s[*i]: span, and whether it has a fraction / an exponent */
static int number(const unsigned char *s, size_t *i, size_t end, const unsigned char **p, size_t *len, int *frac, int *expo) {
    size_t j = *i;
    if (j < end && s[j] == '-') j++;
    if (j >= end) return 0;
    if (s[j] == '0') j++;
    else if (s[j] >= '1' && s[j] <= '9') { while (j < end && s[j] >= '0' && s[j] <= '9') j++; }
    else return 0;
    *frac = 0; *expo = 0;
    if (j < end && s[j] == '.') {
        j++;
        if (j >= end || s[j] < '0' || s[j] > '9') return 0;
        while (j < end && s[j] >= '0' && s[j] <= '9') j++;
        *frac = 1;
    }
    if (j < end && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        if (j < end && (s[j] == '+' || s[j] == '-')) j++;
        if (j >= end || s[j] < '0' || s[j] > '9') return 0;
        while (j < end && s[j] >= '0' && s[j] <= '9') j++;
        *expo = 1;
    }
    *p = s + *i; *len = j - *i; *i = j;
    return 1;
}

static int literal(const unsigned char *s, size_t *i, size_t end, const char *word) {
    size_t n = strlen(word);
    if (*i + n > end || memcmp(s + *i, word, n) != 0) return 0;
    *i += n;
    return 1;
}

/* a number's sign: 1 if it starts with '-' (and *k moves past it) */
static inline int sign(const unsigned char *p, size_t len, size_t *k) {
    if (len && p[0] == '-') { *k = 1; return 1; }
    *k = 0;
    return 0;
}

/* v = v * 10 + d; 0 if that does not fit in 64 bits */
static inline int push_digit(uint64_t *v, unsigned d) {
    if (*v > (UINT64_MAX - d) / 10) return 0;
    *v = *v * 10 + d;
    return 1;
}

/* a magnitude and its sign -> int64; 0 if it does not fit (INT64_MIN included: the Python path reads
 * that one as text) */
static inline int signed64(uint64_t v, int neg, int64_t *out) {
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* an integer's digits -> int64 */
static int to_int64(const unsigned char *p, size_t len, int64_t *out) {
    size_t k;
    int neg = sign(p, len, &k);
    uint64_t v = 0;
    for (; k < len; k++)
        if (!push_digit(&v, (unsigned)(p[k] - '0'))) return 0;
    return signed64(v, neg, out);
}

/* microseconds as written (no exponent) -> nanoseconds, rounded half to even at the nanosecond */
static int to_ns(const unsigned char *p, size_t len, int64_t *out) {
    size_t k;
    int neg = sign(p, len, &k);
    uint64_t v = 0;
    for (; k < len && p[k] != '.'; k++)
        if (!push_digit(&v, (unsigned)(p[k] - '0'))) return 0;
    int kept = 0, first = -1, rest = 0;  /* 3 decimals kept; the next digit and whether any after it is not 0 */
    if (k < len && p[k] == '.') {
        for (k++; k < len; k++) {
            int d = p[k] - '0';
            if (kept < 3) {
                if (!push_digit(&v, (unsigned)d)) return 0;
                kept++;
            } else if (first < 0) first = d;
            else if (d) rest = 1;
        }
    }
    for (; kept < 3; kept++)
        if (!push_digit(&v, 0)) return 0;
    if (first > 5 || (first == 5 && (rest || (v & 1)))) {
        if (v >= (uint64_t)INT64_MAX) return 0;  /* rounding up would not fit */
        v++;
    }
    return signed64(v, neg, out);
}

/* skip any JSON value, strictly */
static int skip(const unsigned char *s, size_t *i, size_t end, int depth) {
    if (depth > MAX_DEPTH || *i >= end) return 0;
    unsigned char c = s[*i];
    const unsigned char *p; size_t len; int a, b;
    if (c == '"') return string(s, i, end, &p, &len, &a);
    if (c == '-' || (c >= '0' && c <= '9')) return number(s, i, end, &p, &len, &a, &b);
    if (c == 't') return literal(s, i, end, "true");
    if (c == 'f') return literal(s, i, end, "false");
    if (c == 'n') return literal(s, i, end, "null");
    if (c == '{' || c == '[') {
        unsigned char close = c == '{' ? '}' : ']';
        size_t j = ws(s, *i + 1, end);
        if (j < end && s[j] == close) { *i = j + 1; return 1; }
        for (;;) {
            if (c == '{') {
                if (j >= end || s[j] != '"' || !string(s, &j, end, &p, &len, &a)) return 0;
                j = ws(s, j, end);
                if (j >= end || s[j] != ':') return 0;
                j = ws(s, j + 1, end);
            }
            if (!skip(s, &j, end, depth + 1)) return 0;
            j = ws(s, j, end);
            if (j >= end) return 0;
            if (s[j] == ',') { j = ws(s, j + 1, end); continue; }
            if (s[j] == close) { *i = j + 1; return 1; }
            return 0;
        }
    }
    return 0;
}

/* ---- emitting cells into columns ------------------------------------------------------------------ */
/* Columns are filled lazily: a cell is written only when it holds a value; the null rows before it
 * (most args are absent from most events) are padded in bulk, and at the end up to the last row. */
static int pad(Col *c, int64_t row) {  /* rows [c->filled, row) become null */
    int64_t k = row - c->filled;
    if (k <= 0) return 1;
    size_t bytes = (size_t)((row + 7) >> 3);
    if (bytes > c->valid.n) {
        if (reserve(&c->valid, bytes - c->valid.n)) return 0;
        memset(c->valid.p + c->valid.n, 0, bytes - c->valid.n);
        c->valid.n = bytes;
    }
    if (c->type == T_STR) {
        if (reserve(&c->offsets, (size_t)k * 4)) return 0;
        int32_t off = (int32_t)c->data.n, *o = (int32_t *)(void *)(c->offsets.p + c->offsets.n);
        for (int64_t q = 0; q < k; q++) o[q] = off;
        c->offsets.n += (size_t)k * 4;
    } else {
        if (reserve(&c->data, (size_t)k * 8)) return 0;
        memset(c->data.p + c->data.n, 0, (size_t)k * 8);
        c->data.n += (size_t)k * 8;
    }
    c->filled = row;
    return 1;
}

static int put_valid(Col *c, int64_t row) {
    if (!pad(c, row)) return 0;
    size_t bytes = (size_t)((row + 8) >> 3);
    if (bytes > c->valid.n) {
        if (reserve(&c->valid, 1)) return 0;
        c->valid.p[c->valid.n++] = 0;
    }
    c->valid.p[row >> 3] |= (unsigned char)(1u << (row & 7));
    c->count++;
    c->filled = row + 1;
    return 1;
}

static int put_utf8(Buf *b, uint32_t cp) {
    if (reserve(b, 4)) return 0;
    unsigned char *o = b->p + b->n;
    if (cp < 0x80) { o[0] = (unsigned char)cp; b->n += 1; }
    else if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); b->n += 2; }
    else if (cp < 0x10000) { o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F); b->n += 3; }
    else { o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F); o[2] = 0x80 | ((cp >> 6) & 0x3F);
           o[3] = 0x80 | (cp & 0x3F); b->n += 4; }
    return 1;
}

static uint32_t hex4(const unsigned char *p) {
    return (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

/* a string's content with its escapes resolved (already checked by string()); 0 on a lone surrogate */
static int unescape(Buf *b, const unsigned char *p, size_t len) {
    size_t k = 0;
    while (k < len) {
        const unsigned char *bs = memchr(p + k, '\\', len - k);
        size_t upto = bs ? (size_t)(bs - p) : len;
        if (upto > k) {
            if (reserve(b, upto - k)) return 0;
            memcpy(b->p + b->n, p + k, upto - k);
            b->n += upto - k;
        }
        if (!bs) break;
        k = upto;
        unsigned char d = p[k + 1];
        if (d == 'u') {
            uint32_t cp = hex4(p + k + 2);
            k += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (k + 6 > len || p[k] != '\\' || p[k + 1] != 'u') return 0;
                uint32_t lo = hex4(p + k + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return 0;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                k += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return 0;
            }
            if (!put_utf8(b, cp)) return 0;
        } else {
            unsigned char o = d == 'b' ? '\b' : d == 'f' ? '\f' : d == 'n' ? '\n' : d == 'r' ? '\r' : d == 't' ? '\t' : d;
            if (reserve(b, 1)) return 0;
            b->p[b->n++] = o;
            k += 2;
        }
    }
    return 1;
}

static int emit(Scan *sc) {
    int64_t row = sc->rows;
    for (int c = 0; c < sc->ncols; c++) {
        Cell *cell = &sc->cells[c];
        cell->seen = 0;
        if (cell->kind == V_NONE) continue;
        Col *col = &sc->cols[c];
        if (!put_valid(col, row)) return 0;
        if (col->type == T_STR) {
            if (cell->kind == V_STR && cell->esc) {
                if (!unescape(&col->data, cell->p, cell->len)) return 0;
            } else if (cell->len) {
                if (reserve(&col->data, cell->len)) return 0;
                memcpy(col->data.p + col->data.n, cell->p, cell->len);
                col->data.n += cell->len;
            }
            if (col->data.n > INT32_MAX || reserve(&col->offsets, 4)) return 0;
            int32_t off = (int32_t)col->data.n;
            memcpy(col->offsets.p + col->offsets.n, &off, 4);
            col->offsets.n += 4;
        } else {
            if (reserve(&col->data, 8)) return 0;
            if (col->type == T_INT) memcpy(col->data.p + col->data.n, &cell->i, 8);
            else memcpy(col->data.p + col->data.n, &cell->f, 8);
            col->data.n += 8;
        }
        cell->kind = V_NONE;
    }
    sc->rows++;
    return 1;
}

/* ---- one event ------------------------------------------------------------------------------------- */
static int set(Cell *cell, int kind) {
    cell->kind = kind;
    return 1;
}

/* a key's first appearance in the event (or in its args); a duplicate key: the Python path decides */
static int claim(Cell *cell) {
    if (cell->seen) return 0;
    cell->seen = 1;
    return 1;
}

/* strings only, or null */
static int str_value(const unsigned char *s, size_t *i, size_t end, Cell *cell) {
    if (s[*i] == 'n') return literal(s, i, end, "null");
    if (s[*i] != '"') return 0;
    if (!string(s, i, end, &cell->p, &cell->len, &cell->esc)) return 0;
    return set(cell, V_STR);
}

/* the typed args by a small hash of (length, first, middle, last byte): one or two candidates to compare */
#define ARG_BUCKETS 256
#define ARG_CHAIN 4
static signed char arg_table[ARG_BUCKETS][ARG_CHAIN];
static int arg_table_ok = 0;

static inline unsigned arg_hash(const unsigned char *p, size_t len) {
    return (unsigned)(len * 31u + p[0] * 7u + p[len / 2] * 3u + p[len - 1]) & (ARG_BUCKETS - 1);
}

static void build_arg_table(void) {
    memset(arg_table, -1, sizeof arg_table);
    arg_table_ok = 1;
    for (int k = 0; k < n_args; k++) {
        if (arg_len[k] == 0) { arg_table_ok = 0; return; }
        signed char *chain = arg_table[arg_hash((const unsigned char *)arg_key[k], arg_len[k])];
        int q = 0;
        while (q < ARG_CHAIN && chain[q] >= 0) q++;
        if (q == ARG_CHAIN) { arg_table_ok = 0; return; }  /* too many collisions: compare with every key */
        chain[q] = (signed char)k;
    }
}

static int find_arg(const unsigned char *p, size_t len) {
    if (len == 0) return -1;
    if (arg_table_ok) {
        const signed char *chain = arg_table[arg_hash(p, len)];
        for (int q = 0; q < ARG_CHAIN && chain[q] >= 0; q++) {
            int k = chain[q];
            if (arg_len[k] == len && memcmp(arg_key[k], p, len) == 0) return k;
        }
        return -1;
    }
    for (int k = 0; k < n_args; k++)
        if (arg_len[k] == len && memcmp(arg_key[k], p, len) == 0) return k;
    return -1;
}

static int args_object(Scan *sc, size_t *i) {
    const unsigned char *s = sc->s;
    size_t end = sc->end, j = ws(s, *i + 1, end);
    if (j < end && s[j] == '}') { *i = j + 1; return 1; }
    for (;;) {
        const unsigned char *kp; size_t klen; int kesc;
        if (j >= end || s[j] != '"' || !string(s, &j, end, &kp, &klen, &kesc) || kesc) return 0;
        j = ws(s, j, end);
        if (j >= end || s[j] != ':') return 0;
        j = ws(s, j + 1, end);
        if (j >= end) return 0;
        int k = find_arg(kp, klen);
        if (k < 0) {
            if (!skip(s, &j, end, 2)) return 0;
        } else {
            Cell *cell = &sc->cells[C_ARGS0 + k];
            size_t v0 = j;
            if (!claim(cell)) return 0;
            unsigned char c = s[j];
            const unsigned char *p; size_t len; int frac, expo;
            switch (arg_kind[k]) {
            case K_INT:
                if (c == 'n') { if (!literal(s, &j, end, "null")) return 0; break; }
                if (!number(s, &j, end, &p, &len, &frac, &expo) || frac || expo || !to_int64(p, len, &cell->i)) return 0;
                if (!set(cell, V_INT)) return 0;
                break;
            case K_STR:
                if (!str_value(s, &j, end, cell)) return 0;
                break;
            case K_FLOAT:  /* an integer a double holds exactly; any other number: the Python path */
                if (c == 'n') { if (!literal(s, &j, end, "null")) return 0; break; }
                if (!number(s, &j, end, &p, &len, &frac, &expo) || frac || expo) return 0;
                {
                    int64_t iv;
                    if (!to_int64(p, len, &iv) || iv > (1LL << 53) || iv < -(1LL << 53)) return 0;
                    cell->f = (double)iv;
                }
                if (!set(cell, V_F64)) return 0;
                break;
            case K_INT_OR_TEXT:
                if (c == 'n') { if (!literal(s, &j, end, "null")) return 0; break; }
                if (c == '"') {  /* a string of plain decimal digits: its integer; one with an ASCII letter
                                  * (ROCm's "0x0"): NULL, as Python's int() refuses it; any other: Python decides */
                    int esc, letter = 0;
                    if (!string(s, &j, end, &p, &len, &esc) || esc) return 0;
                    for (size_t q = 0; q < len && !letter; q++) letter = (p[q] | 0x20) >= 'a' && (p[q] | 0x20) <= 'z';
                    if (letter) break;
                    if (len == 0 || len > 19) return 0;
                    size_t q = p[0] == '-' ? 1 : 0;
                    if (q == len) return 0;
                    for (; q < len; q++) if (p[q] < '0' || p[q] > '9') return 0;
                    if (!to_int64(p, len, &cell->i)) return 0;
                } else if (!number(s, &j, end, &p, &len, &frac, &expo) || frac || expo || !to_int64(p, len, &cell->i)) {
                    return 0;
                }
                if (!set(cell, V_INT)) return 0;
                break;
            case K_EXACT_INT:
                if (c == 'n') { if (!literal(s, &j, end, "null")) return 0; break; }
                if (!number(s, &j, end, &p, &len, &frac, &expo) || frac || expo) return 0;
                if (len == 2 && p[0] == '-' && p[1] == '0') return 0;
                cell->p = p; cell->len = len; cell->esc = 0;
                if (!set(cell, V_STR)) return 0;
                break;
            case K_TEXT:
                if (c == '"') {
                    if (!string(s, &j, end, &cell->p, &cell->len, &cell->esc)) return 0;
                    if (!set(cell, V_STR)) return 0;
                    break;
                }
                /* fall through: any other value as its JSON text */
            case K_JSON:
                if (!skip(s, &j, end, 2)) return 0;
                cell->p = s + v0; cell->len = j - v0; cell->esc = 0;
                if (!set(cell, V_RAW)) return 0;
                break;
            default:
                return 0;
            }
        }
        j = ws(s, j, end);
        if (j >= end) return 0;
        if (s[j] == ',') { j = ws(s, j + 1, end); continue; }
        if (s[j] == '}') { *i = j + 1; return 1; }
        return 0;
    }
}

/* pid, tid, id: an integer (int64), or a string (its text column); null */
static int int_or_string(const unsigned char *s, size_t *i, size_t end, Cell *num, Cell *text) {
    unsigned char c = s[*i];
    const unsigned char *p; size_t len; int frac, expo;
    if (!claim(num)) return 0;
    if (c == 'n') return literal(s, i, end, "null");
    if (c == '"') return string(s, i, end, &text->p, &text->len, &text->esc) && set(text, V_STR);
    if (!number(s, i, end, &p, &len, &frac, &expo) || frac || expo || !to_int64(p, len, &num->i)) return 0;
    return set(num, V_INT);
}

static int time_value(const unsigned char *s, size_t *i, size_t end, Cell *cell) {
    const unsigned char *p; size_t len; int frac, expo;
    if (!claim(cell)) return 0;
    if (s[*i] == 'n') return literal(s, i, end, "null");
    if (!number(s, i, end, &p, &len, &frac, &expo) || expo || !to_ns(p, len, &cell->i)) return 0;
    return set(cell, V_INT);
}

static int event(Scan *sc, size_t *i) {
    const unsigned char *s = sc->s;
    size_t end = sc->end, j = *i;
    int seen_args = 0;
    if (j >= end || s[j] != '{') return 0;
    j = ws(s, j + 1, end);
    if (j < end && s[j] == '}') return 0;  /* no 'ph': the Python path names the event */
    for (;;) {
        const unsigned char *kp; size_t klen; int kesc;
        if (j >= end || s[j] != '"' || !string(s, &j, end, &kp, &klen, &kesc) || kesc) return 0;
        j = ws(s, j, end);
        if (j >= end || s[j] != ':') return 0;
        j = ws(s, j + 1, end);
        if (j >= end) return 0;
        Cell *cells = sc->cells;
        int ok;
#define KEY(lit) (klen == sizeof(lit) - 1 && memcmp(kp, lit, sizeof(lit) - 1) == 0)  /* a constant size: inlined */
        if (KEY("ph")) ok = claim(&cells[C_PH]) && str_value(s, &j, end, &cells[C_PH]);
        else if (KEY("name")) ok = claim(&cells[C_NAME]) && str_value(s, &j, end, &cells[C_NAME]);
        else if (KEY("cat")) ok = claim(&cells[C_CAT]) && str_value(s, &j, end, &cells[C_CAT]);
        else if (KEY("ts")) ok = time_value(s, &j, end, &cells[C_TS]);
        else if (KEY("dur")) ok = time_value(s, &j, end, &cells[C_DUR]);
        else if (KEY("pid")) ok = int_or_string(s, &j, end, &cells[C_PID], &cells[C_PID_TEXT]);
        else if (KEY("tid")) ok = int_or_string(s, &j, end, &cells[C_TID], &cells[C_TID_TEXT]);
        else if (KEY("id")) ok = int_or_string(s, &j, end, &cells[C_ID], &cells[C_ID_TEXT]);
        else if (KEY("bp")) ok = claim(&cells[C_BP]) && str_value(s, &j, end, &cells[C_BP]);
        else if (KEY("s")) ok = claim(&cells[C_S]) && str_value(s, &j, end, &cells[C_S]);
        else if (KEY("args")) {
            if (seen_args) return 0;
            seen_args = 1;
            if (s[j] == 'n') ok = literal(s, &j, end, "null");
            else if (s[j] == '{') {
                size_t a0 = j;
                ok = args_object(sc, &j);
                Cell *raw = &cells[C_ARGS0 + n_args];
                raw->p = s + a0; raw->len = j - a0; raw->esc = 0; raw->kind = V_RAW;
            } else ok = 0;
        } else return 0;  /* a non-standard key: the Python path keeps it in `extra` */
#undef KEY
        if (!ok) return 0;
        j = ws(s, j, end);
        if (j >= end) return 0;
        if (s[j] == ',') { j = ws(s, j + 1, end); continue; }
        if (s[j] == '}') { j++; break; }
        return 0;
    }
    if (sc->cells[C_PH].kind == V_NONE) return 0;
    *i = j;
    return emit(sc);
}

static void free_cols(Col *cols, int n) {
    for (int c = 0; c < n; c++) { free(cols[c].data.p); free(cols[c].offsets.p); free(cols[c].valid.p); }
    free(cols);
}

static int run_scan(Scan *sc) {
    const unsigned char *s = sc->s;
    size_t end = sc->end;
    for (int c = 0; c < sc->ncols; c++) {
        if (sc->cols[c].type == T_STR) {
            if (reserve(&sc->cols[c].offsets, 4)) return 0;
            memset(sc->cols[c].offsets.p, 0, 4);
            sc->cols[c].offsets.n = 4;
        }
    }
    size_t i = ws(s, 0, end);
    if (i >= end) return 0;
    for (;;) {
        if (!event(sc, &i)) return 0;
        i = ws(s, i, end);
        if (i >= end) {
            for (int c = 0; c < sc->ncols; c++)  /* a column with no value at all stays empty: Python shares zeros */
                if (sc->cols[c].count && !pad(&sc->cols[c], sc->rows)) return 0;
            return 1;
        }
        if (s[i] != ',') return 0;
        i = ws(s, i + 1, end);
    }
}

/* A block of memory the scan filled, handed to Python (and Arrow) without a copy: it frees it. */
typedef struct { PyObject_HEAD unsigned char *p; Py_ssize_t n; } Block;

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Block *b = (Block *)self;
    return PyBuffer_FillInfo(view, self, b->p, b->n, 1, flags);
}

static void block_dealloc(PyObject *self) {
    free(((Block *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs block_buffer = {block_getbuffer, NULL};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracekit.ingestion._fastscan.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = block_dealloc,
    .tp_as_buffer = &block_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "memory filled by scan(), exposed through the buffer protocol",
};

static PyObject *as_block(Buf *b) {  /* takes the memory of b */
    if (!b->p && reserve(b, 1)) return PyErr_NoMemory();
    Block *o = PyObject_New(Block, &BlockType);
    if (!o) return NULL;
    o->p = b->p; o->n = (Py_ssize_t)b->n;
    b->p = NULL; b->n = b->cap = 0;
    return (PyObject *)o;
}

/* {ph: events} of a scanned ph column (every event has a ph: the scan declines one without) */
static PyObject *phase_counts(Col *col, int64_t rows) {
    PyObject *counts = PyDict_New();
    if (!counts) return NULL;
    const int32_t *off = (const int32_t *)(const void *)col->offsets.p;
    const char *last = NULL;
    Py_ssize_t last_len = -1;
    long long run = 0;
    for (int64_t r = 0; r <= rows; r++) {
        const char *p = r < rows ? (const char *)col->data.p + off[r] : NULL;
        Py_ssize_t len = r < rows ? off[r + 1] - off[r] : -1;
        if (r < rows && len == last_len && (len == 0 || memcmp(p, last, (size_t)len) == 0)) { run++; continue; }
        if (run) {  /* flush the run of equal phases before this row */
            PyObject *key = PyUnicode_DecodeUTF8(last, last_len, "strict");
            if (!key) { Py_DECREF(counts); return NULL; }
            PyObject *old = PyDict_GetItemWithError(counts, key);
            long long total = run + (old ? PyLong_AsLongLong(old) : 0);
            PyObject *val = PyLong_FromLongLong(total);
            if (!val || PyDict_SetItem(counts, key, val) < 0) { Py_DECREF(key); Py_XDECREF(val); Py_DECREF(counts); return NULL; }
            Py_DECREF(key); Py_DECREF(val);
        }
        last = p; last_len = len; run = 1;
    }
    return counts;
}

static PyObject *py_scan(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (n_args <= 0) { PyErr_SetString(PyExc_RuntimeError, "configure() first"); return NULL; }
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Scan sc;
    sc.s = view.buf; sc.end = (size_t)view.len; sc.ncols = C_ARGS0 + n_args + 1; sc.rows = 0;
    sc.cols = calloc((size_t)sc.ncols, sizeof(Col));
    sc.cells = calloc((size_t)sc.ncols, sizeof(Cell));
    if (!sc.cols || !sc.cells) { free(sc.cols); free(sc.cells); PyBuffer_Release(&view); return PyErr_NoMemory(); }
    for (int c = 0; c < sc.ncols; c++) {
        int k = c - C_ARGS0;
        sc.cols[c].type = c < C_ARGS0 ? top_types[c]
                        : k == n_args ? T_STR
                        : arg_kind[k] == K_INT || arg_kind[k] == K_INT_OR_TEXT ? T_INT
                        : arg_kind[k] == K_FLOAT ? T_F64 : T_STR;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = run_scan(&sc);
    Py_END_ALLOW_THREADS
    free(sc.cells);
    PyBuffer_Release(&view);
    stat_chunks++;
    if (!ok) { stat_declined++; free_cols(sc.cols, sc.ncols); Py_RETURN_NONE; }
    stat_events += sc.rows;
    PyObject *phases = phase_counts(&sc.cols[C_PH], sc.rows);
    if (!phases) { free_cols(sc.cols, sc.ncols); return NULL; }
    PyObject *list = PyList_New(sc.ncols);
    if (!list) { Py_DECREF(phases); free_cols(sc.cols, sc.ncols); return NULL; }
    for (int c = 0; c < sc.ncols; c++) {
        Col *col = &sc.cols[c];
        long long nulls = (long long)(sc.rows - col->count);
        if (col->count == 0) {  /* every row null: (None, None, None, rows) */
            PyObject *item = Py_BuildValue("(OOOL)", Py_None, Py_None, Py_None, nulls);
            if (!item) { Py_DECREF(list); Py_DECREF(phases); free_cols(sc.cols, sc.ncols); return NULL; }
            PyList_SET_ITEM(list, c, item);
            continue;
        }
        PyObject *valid = nulls ? as_block(&col->valid) : (Py_INCREF(Py_None), Py_None);
        PyObject *data = as_block(&col->data);
        PyObject *offs = col->type == T_STR ? as_block(&col->offsets) : (Py_INCREF(Py_None), Py_None);
        PyObject *item = (valid && data && offs) ? Py_BuildValue("(NNNL)", valid, data, offs, nulls) : NULL;
        if (!item) { Py_XDECREF(valid); Py_XDECREF(data); Py_XDECREF(offs); Py_DECREF(list); Py_DECREF(phases); free_cols(sc.cols, sc.ncols); return NULL; }
        PyList_SET_ITEM(list, c, item);
    }
    free_cols(sc.cols, sc.ncols);
    return Py_BuildValue("(LNN)", (long long)sc.rows, list, phases);
}

/* ---- framing ------------------------------------------------------------------------------------------ */

/* From buf[pos] (the start of an event, or whitespace before it), follow the nesting and the strings to
 * the latest top-level boundary: '}' then ',' then '{' (next = the '{'), or '}' then ']' (is_end, next =
 * the ']'). Counts the events before the cut. None when there is no complete boundary in the buffer. */
static PyObject *py_frame(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n", &view, &pos)) return NULL;
    const unsigned char *s = view.buf;
    size_t end = (size_t)view.len, i = (size_t)pos;
    long long events = 0, cut_events = 0;
    Py_ssize_t cut = -1, next = -1;
    int is_end = 0;
    Py_BEGIN_ALLOW_THREADS
    long depth = 0;
    while (i < end) {
        unsigned char c = s[i];
        if (c == '"') {
            i++;
            for (;;) {
                const unsigned char *q = memchr(s + i, '"', end - i);
                if (!q) { i = end; break; }
                size_t k = (size_t)(q - s), b = k;
                while (b > i && s[b - 1] == '\\') b--;
                i = k + 1;
                if (((k - b) & 1) == 0) break;  /* an even run of backslashes: the quote closes */
            }
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (depth == 0) break;  /* ']' closing the array right after a ',' or at the start: the Python path */
            depth--;
            if (depth == 0) {
                if (c != '}') break;
                events++;
                size_t j = ws(s, i + 1, end);
                if (j >= end) break;
                if (s[j] == ']') { cut = (Py_ssize_t)i; next = (Py_ssize_t)j; is_end = 1; cut_events = events; break; }
                if (s[j] != ',') break;
                j = ws(s, j + 1, end);
                if (j >= end) break;
                if (s[j] != '{') break;
                cut = (Py_ssize_t)i; next = (Py_ssize_t)j; cut_events = events;
                i = j;
                continue;
            }
        }
        i++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (cut < 0) Py_RETURN_NONE;
    return Py_BuildValue("(nnOL)", cut, next, is_end ? Py_True : Py_False, cut_events);
}

static PyObject *py_configure(PyObject *self, PyObject *args) {
    PyObject *keys, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &keys, &PyList_Type, &kinds)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(keys);
    if (n != PyList_GET_SIZE(kinds) || n <= 0 || n > MAX_ARGS) {
        PyErr_SetString(PyExc_ValueError, "keys and kinds: lists of one length, 1 to 128");
        return NULL;
    }
    /* the new table is built and checked whole before the old one goes: a call that fails leaves the
     * old table in use */
    char *key[MAX_ARGS];
    size_t klen[MAX_ARGS];
    int kind[MAX_ARGS];
    Py_ssize_t made = 0;
    for (; made < n; made++) {
        char *p; Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PyList_GET_ITEM(keys, made), &p, &len) < 0) goto fail;
        long kd = PyLong_AsLong(PyList_GET_ITEM(kinds, made));
        if (kd == -1 && PyErr_Occurred()) goto fail;
        if (len == 0 || kd < K_INT || kd > K_TEXT) {
            PyErr_Format(PyExc_ValueError, "key %zd: an empty key, or kind %ld not in 0..%d", made, kd, K_TEXT);
            goto fail;
        }
        for (Py_ssize_t q = 0; q < made; q++)
            if (klen[q] == (size_t)len && memcmp(key[q], p, (size_t)len) == 0) {
                PyErr_Format(PyExc_ValueError, "key %zd repeats key %zd", made, q);
                goto fail;
            }
        key[made] = malloc((size_t)len + 1);
        if (!key[made]) { PyErr_NoMemory(); goto fail; }
        memcpy(key[made], p, (size_t)len); key[made][len] = 0;
        klen[made] = (size_t)len;
        kind[made] = (int)kd;
    }
    for (int k = 0; k < n_args; k++) free(arg_key[k]);
    for (Py_ssize_t k = 0; k < n; k++) { arg_key[k] = key[k]; arg_len[k] = klen[k]; arg_kind[k] = kind[k]; }
    n_args = (int)n;
    build_arg_table();
    Py_RETURN_NONE;
fail:
    for (Py_ssize_t k = 0; k < made; k++) free(key[k]);
    return NULL;
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{sLsLsL}", "chunks", stat_chunks, "declined", stat_declined, "events", stat_events);
}

static PyMethodDef methods[] = {
    {"configure", py_configure, METH_VARARGS, "Set the typed args: keys (bytes) and kinds (ints)."},
    {"scan", py_scan, METH_O, "Framed events -> (rows, column buffers), or None for the Python path."},
    {"frame", py_frame, METH_VARARGS, "(buf, pos) -> (cut, next, is_end, events) or None."},
    {"stats", py_stats, METH_NOARGS, "{chunks scanned, declined, events accepted} since the module loaded."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastscan(void) {
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
