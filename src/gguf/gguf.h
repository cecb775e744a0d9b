/* gguf.h: reading and writing GGUF files (v2 and v3, little-endian).
 *
 * The reader maps a file (or takes a caller's buffer), validates the whole
 * directory before returning, and then hands out views: every string, array
 * and tensor pointer returned points into the mapping and lives until
 * gguf_close(). Nothing in the file is trusted: every count, length, offset
 * and dimension is checked against the bytes present before it is used, so a
 * malformed file is an error value with a kind, never a crash.
 *
 * The writer streams: the directory is declared first, then the tensor data is
 * appended in declaration order, so a 20 GB file needs bounded memory.
 *
 * Thread safety: a gguf_file is immutable after gguf_open() and may be read
 * from any number of threads. A gguf_writer belongs to one thread.
 *
 * What the reader accepts (src/gguf/gguf_read.c), compared with llama.cpp's
 * ggml/src/gguf.cpp at the pinned version:
 * - stricter: keys and tensor names must be non-empty UTF-8 without NUL bytes
 *   (ggml checks only that keys are non-empty); n_dims 0 and zero dimensions
 *   are refused (ggml accepts both; its writer never writes n_dims 0 and
 *   asserts on a zero-element tensor); arrays nest at most 16 deep (ggml
 *   refuses every array of arrays).
 * - looser: tensors may lie in any order with gaps, as long as each offset is
 *   aligned, inside the file and shares no byte with another (ggml wants them
 *   packed in file order); tensor names of 64 bytes or more (ggml refuses
 *   them); strings and arrays above 2^30 bytes/elements.
 * - the same: versions 2 and 3 (1 is refused); general.alignment must be a
 *   u32 power of two; the data section starts at the end of the directory
 *   padded to the alignment (ggml pads only when there are tensors, so with no
 *   tensors gguf_data_offset() may differ from ggml's); a bool is any byte.
 * Memory allocated at open is bounded by a small multiple of the file size,
 * and tensor data is never read.
 */
#ifndef Q36_GGUF_H
#define Q36_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "../util/err.h"

#define GGUF_MAGIC             0x46554747u  /* "GGUF" read as little-endian u32 */
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_DIMS          4

/* Metadata value types, as stored in the file. */
enum gguf_vtype {
    GGUF_T_U8 = 0, GGUF_T_I8 = 1, GGUF_T_U16 = 2, GGUF_T_I16 = 3,
    GGUF_T_U32 = 4, GGUF_T_I32 = 5, GGUF_T_F32 = 6, GGUF_T_BOOL = 7,
    GGUF_T_STR = 8, GGUF_T_ARR = 9, GGUF_T_U64 = 10, GGUF_T_I64 = 11,
    GGUF_T_F64 = 12,
    GGUF_T_COUNT
};

/* Error kinds of the reader (q36_err.kind). Each message names the file, the
 * object (key or tensor, with its index), expected vs found, and the byte
 * offset where the problem was found. */
enum gguf_err_kind {
    GGUF_E_IO        = -101, /* cannot open / stat / map / read the file */
    GGUF_E_MAGIC     = -102, /* first four bytes are not "GGUF" */
    GGUF_E_VERSION   = -103, /* version other than 2 or 3 */
    GGUF_E_TRUNCATED = -104, /* a field or a tensor extends past the end */
    GGUF_E_VTYPE     = -105, /* unknown metadata value type (or array of bad type) */
    GGUF_E_COUNT     = -106, /* a count that the remaining bytes cannot hold */
    GGUF_E_UTF8      = -107, /* a key or tensor name that is not valid UTF-8, or empty */
    GGUF_E_DUP_KEY   = -108, /* the same metadata key twice */
    GGUF_E_DUP_NAME  = -109, /* the same tensor name twice */
    GGUF_E_TTYPE     = -110, /* unknown or retired tensor type id */
    GGUF_E_SHAPE     = -111, /* n_dims out of range, a zero/overflowing dimension,
                                ne0 not a multiple of the block size */
    GGUF_E_OFFSET    = -112, /* tensor offset not aligned, or past the data */
    GGUF_E_OVERLAP   = -113, /* two tensors share bytes */
    GGUF_E_ALIGN     = -114, /* general.alignment not a power of two / wrong type */
    GGUF_E_NOMEM     = -115, /* allocation failed */
    GGUF_E_WRITE     = -116, /* writer: misuse or output error */
};

/* A metadata value: a view into the mapping. For arrays, `n` is the element
 * count and `elem` the element type; elements are read with gguf_arr_*.
 * Scalars have n = 1 and `p` at their (unaligned) bytes. */
typedef struct gguf_value {
    enum gguf_vtype type;
    enum gguf_vtype elem;     /* arrays only */
    uint64_t        n;        /* arrays: element count; strings: byte length */
    const uint8_t  *p;        /* scalar bytes, string bytes, or first array element */
    uint32_t        aux;      /* reader-internal (index of an offset table) */
} gguf_value;

typedef struct gguf_tensor {
    const char     *name;     /* NUL-terminated copy owned by the gguf_file */
    uint32_t        type;     /* enum quant_type id */
    uint32_t        n_dims;   /* 1..GGUF_MAX_DIMS */
    uint64_t        ne[GGUF_MAX_DIMS]; /* ne[0] fastest; unused dims are 1 */
    uint64_t        offset;   /* relative to the data section */
    uint64_t        nbytes;
    const void     *data;     /* into the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Opens and validates `path` (mmap, read-only). On failure returns a negative
 * gguf_err_kind, sets err and leaves *out NULL. */
int gguf_open(const char *path, gguf_file **out, q36_err *err);

/* Same on a caller's buffer, which must outlive the gguf_file; `name` is used
 * in messages. Used by the fuzz target and tests. */
int gguf_open_mem(const void *data, size_t size, const char *name,
                  gguf_file **out, q36_err *err);

void gguf_close(gguf_file *f);        /* accepts NULL */

const char *gguf_path(const gguf_file *f);
uint32_t    gguf_version(const gguf_file *f);
uint32_t    gguf_alignment(const gguf_file *f);
uint64_t    gguf_data_offset(const gguf_file *f);   /* byte offset of the data section */
uint64_t    gguf_file_size(const gguf_file *f);

/* Metadata. Keys are NUL-terminated copies owned by the file. */
int64_t     gguf_n_kv(const gguf_file *f);
const char *gguf_kv_key(const gguf_file *f, int64_t i);
const gguf_value *gguf_kv_value(const gguf_file *f, int64_t i);
int64_t     gguf_find_key(const gguf_file *f, const char *key);     /* -1 if absent */
const gguf_value *gguf_get(const gguf_file *f, const char *key);    /* NULL if absent */

/* Typed reads of a scalar value. Each returns 0, or GGUF_E_VTYPE when v is
 * NULL or its type does not convert (callers name the key in their message):
 * _int accepts every integer type and bool, and refuses a u64 above INT64_MAX;
 * _float accepts f32, f64 and integers (not bool); _bool accepts bool and
 * integers (non-zero is true). */
int gguf_value_int(const gguf_value *v, int64_t *out);
int gguf_value_float(const gguf_value *v, double *out);
int gguf_value_bool(const gguf_value *v, bool *out);
/* A string value's bytes (not NUL-terminated) and length, or NULL if not a string. */
const char *gguf_value_str(const gguf_value *v, uint64_t *len);

/* Array elements. Fixed-size elements are O(1); string and nested-array
 * elements are O(1) through an offset table built at open. Each returns 0 or
 * GGUF_E_VTYPE / GGUF_E_COUNT (index out of range). */
int gguf_arr_get(const gguf_file *f, const gguf_value *arr, uint64_t i, gguf_value *out);
int gguf_arr_int(const gguf_file *f, const gguf_value *arr, uint64_t i, int64_t *out);
int gguf_arr_float(const gguf_file *f, const gguf_value *arr, uint64_t i, double *out);
const char *gguf_arr_str(const gguf_file *f, const gguf_value *arr, uint64_t i, uint64_t *len);

/* Tensors, in file order. */
int64_t            gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, int64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */
uint64_t           gguf_tensor_nelements(const gguf_tensor *t);

const char *gguf_vtype_name(enum gguf_vtype t);  /* "u32", "str", ...; "?" if unknown */
const char *gguf_err_kind_name(int kind);        /* "truncated", ...; "?" if unknown */

/* ------------------------------------------------------------------ writer
 * Usage:
 *   gguf_writer *w = gguf_writer_new();
 *   gguf_w_u32(w, "general.alignment", 32); ... gguf_w_str(w, ...); ...
 *   gguf_w_tensor(w, "token_embd.weight", QT_Q8_0, 2, ne);  ... (declare all)
 *   gguf_w_begin(w, "out.gguf", &err);           writes header+directory
 *   for each declared tensor, in order: gguf_w_data(w, bytes, n, &err) ...
 *       (any number of calls; exactly nbytes in total per tensor)
 *   gguf_w_finish(w, &err);                       pads, closes, checks sizes
 *   gguf_writer_free(w);
 * Setters copy their arguments. Setting a key twice replaces its value.
 * Errors from setters are remembered and reported by gguf_w_begin. The
 * writer always writes version 3 and honours general.alignment if set (u32).
 */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);             /* accepts NULL; closes an open file */

void gguf_w_u8  (gguf_writer *w, const char *key, uint8_t v);
void gguf_w_i8  (gguf_writer *w, const char *key, int8_t v);
void gguf_w_u16 (gguf_writer *w, const char *key, uint16_t v);
void gguf_w_i16 (gguf_writer *w, const char *key, int16_t v);
void gguf_w_u32 (gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32 (gguf_writer *w, const char *key, int32_t v);
void gguf_w_u64 (gguf_writer *w, const char *key, uint64_t v);
void gguf_w_i64 (gguf_writer *w, const char *key, int64_t v);
void gguf_w_f32 (gguf_writer *w, const char *key, float v);
void gguf_w_f64 (gguf_writer *w, const char *key, double v);
void gguf_w_bool(gguf_writer *w, const char *key, bool v);
void gguf_w_str (gguf_writer *w, const char *key, const char *v);
/* Array of fixed-size elements (any type but STR and ARR): n elements of
 * gguf type `elem`, packed little-endian in `data`. */
void gguf_w_arr (gguf_writer *w, const char *key, enum gguf_vtype elem,
                 const void *data, uint64_t n);
/* Array of n strings; lens may be NULL for NUL-terminated strings. */
void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                    const uint64_t *lens, uint64_t n);
/* Raw value in file encoding (type tag excluded), for nested arrays and
 * copying values between files: `bytes` is what follows the type tag. */
void gguf_w_raw (gguf_writer *w, const char *key, enum gguf_vtype type,
                 const void *bytes, uint64_t nbytes);

/* Declares a tensor; returns its index or a negative kind (also remembered). */
int  gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type,
                   uint32_t n_dims, const uint64_t *ne);
int  gguf_w_begin (gguf_writer *w, const char *path, q36_err *err);
int  gguf_w_data  (gguf_writer *w, const void *bytes, uint64_t n, q36_err *err);
int  gguf_w_finish(gguf_writer *w, q36_err *err);

#endif
