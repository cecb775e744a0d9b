/* gguf_internal.h: what the reader's files share and nobody else sees: the
 * layout of an opened gguf_file, the offset tables behind string and nested
 * arrays, and the value validator the writer reuses for gguf_w_raw.
 *
 * Not a public header: include gguf.h from outside src/gguf/.
 */
#ifndef Q36_GGUF_INTERNAL_H
#define Q36_GGUF_INTERNAL_H

#include "gguf.h"

/* Arrays deeper than this are refused (GGUF_E_VTYPE): the parser recurses
 * once per level, and llama.cpp refuses every nested array anyway. */
#define GGUF_MAX_NEST 16

/* One offset table, for one array whose elements are strings or arrays:
 * element i starts at base + off[off0 + i]; for arrays of arrays, sub[sub0 + i]
 * is the table of element i (or GGUF_NO_TABLE when its elements are fixed). */
typedef struct gguf_table {
    uint64_t off0;
    uint64_t sub0;
} gguf_table;

#define GGUF_NO_TABLE UINT32_MAX

typedef struct gguf_kv {
    const char *key;          /* into gguf_file.names */
    uint64_t    klen;         /* bytes of key, without the NUL */
    uint64_t    koff;         /* byte offset of the key's length field */
    gguf_value  v;
} gguf_kv;

struct gguf_file {
    char          *path;      /* copy of the path or buffer name */
    const uint8_t *base;      /* the mapping or the caller's buffer */
    uint64_t       size;
    int            mapped;    /* 1 when base must be munmap()ed */

    uint32_t version, alignment;
    uint64_t data_offset;

    int64_t      n_kv;
    gguf_kv     *kv;
    int64_t      n_tensors;
    gguf_tensor *tensors;
    uint64_t    *t_nlen;      /* bytes of each tensor name */
    char        *names;       /* all keys and tensor names, NUL-terminated */

    /* open-addressing hash tables of index+1 (0 = empty); cap is a power of 2 */
    uint64_t *kv_hash, kv_cap;
    uint64_t *t_hash, t_cap;

    gguf_table *tables;   uint64_t n_tables;
    uint64_t   *off;      uint64_t n_off;
    uint32_t   *sub;      uint64_t n_sub;
};

/* FNV-1a over n bytes: the hash of keys and tensor names. */
uint64_t gguf_hash(const char *s, size_t n);

/* Checks that `bytes` is exactly one well-formed encoded value of `type`
 * (what follows the type tag in a file). Returns 0 or a negative kind, with a
 * message naming `what`. Used by the writer for gguf_w_raw. */
int gguf_check_value(enum gguf_vtype type, const void *bytes, uint64_t nbytes,
                     const char *what, q36_err *err);

/* Bytes of one element of a fixed-size type; 0 for STR, ARR and unknown. */
uint32_t gguf_vtype_size(enum gguf_vtype t);

/* True when s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
bool gguf_utf8_valid(const uint8_t *s, uint64_t n);

#endif
