/* tok_bytes.c: the byte-level alphabet of GPT-2 style BPE vocabularies.
 *
 * Every byte value maps to one printable code point so that token texts are
 * printable strings: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to
 * themselves; the other 68 bytes (0x00-0x20, 0x7F-0xA0, 0xAD), in increasing
 * order, map to U+0100, U+0101, ... U+0143 (MODEL.md §8.3 step 4).
 */
#include "tok_internal.h"

static bool byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t tok_byte_to_cpt(uint8_t b)
{
    if (byte_is_printable(b))
        return b;
    /* Rank of b among the non-printable bytes. */
    uint32_t rank = 0;
    for (unsigned x = 0; x < b; x++)
        rank += !byte_is_printable(x);
    return 0x100 + rank;
}

int tok_cpt_to_byte(uint32_t cpt)
{
    if (cpt <= 0xFF)
        return byte_is_printable(cpt) ? (int)cpt : -1;
    if (cpt < 0x100 || cpt > 0x143)
        return -1;
    uint32_t rank = cpt - 0x100;
    for (unsigned x = 0; x < 256; x++)
        if (!byte_is_printable(x) && rank-- == 0)
            return (int)x;
    return -1;
}
