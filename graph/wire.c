/*
** Checks on the protobuf wire format before protobuf-c unpacks it: its unpacker
** recurses once per nested message without a bound, so a hostile file of a few
** MB (a model's subgraphs, a SequenceProto of sequences) could overflow the
** stack. The model loader and the test-data value decoder both walk the bytes
** here first.
*/
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "graph/graph.h"

bool graph_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* What the bytes should be, and what bounds their nesting, for messages. */
typedef struct wire_what {
    const char *message, *limit;
} wire_what;

/* A message's fields walked with its descriptor, descending into sub-messages. */
static int scan_message(const ProtobufCMessageDescriptor *d, const uint8_t *p,
                        const uint8_t *end, uint32_t level, uint32_t max, const wire_what *w,
                        errbuf *err) {
    if (level > max)
        return err_set(err, TILEOPT_LIMIT,
                       "protobuf messages nest deeper than %" PRIu32 " levels (%s)", max,
                       w->limit);
    while (p < end) {
        uint64_t key, len;
        if (!graph_wire_varint(&p, end, &key)) break; /* protobuf-c reports the details */
        /* protobuf-c accepts field number 0 when its key is over-long (80 00) but
        ** rejects the 1-byte key it writes back, so such a model would save into
        ** bytes that do not load (fuzz_load found this). */
        if (key >> 3 == 0)
            return err_set(err, TILEOPT_PARSE,
                           "not a valid %s: the protobuf has a field number 0", w->message);
        uint32_t wire = (uint32_t)(key & 7);
        if (wire == 0) {
            if (!graph_wire_varint(&p, end, &len)) break;
        } else if (wire == 1) {
            p += (size_t)(end - p) < 8 ? (size_t)(end - p) : 8;
        } else if (wire == 5) {
            p += (size_t)(end - p) < 4 ? (size_t)(end - p) : 4;
        } else if (wire == 2) {
            if (!graph_wire_varint(&p, end, &len) || len > (uint64_t)(end - p)) break;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int rc = scan_message(f->descriptor, p, p + len, level + 1, max, w, err);
                if (rc) return rc;
            }
            /* protobuf-c hands strings out NUL-terminated: a NUL inside one would
            ** cut it short here while other readers see all of it (a name, or an
            ** external-data location, meaning two different things). */
            if (f && f->type == PROTOBUF_C_TYPE_STRING && strcmp(f->name, "doc_string") != 0 &&
                memchr(p, 0, (size_t)len))
                return err_set(err, TILEOPT_INVALID, "%s.%s holds a NUL byte", d->short_name,
                               f->name);
            p += len;
        } else {
            break;
        }
    }
    return TILEOPT_OK;
}

int graph_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                     uint32_t max_levels, errbuf *err) {
    const uint8_t *p = data;
    bool model = d == &onnx__model_proto__descriptor;
    wire_what w = {model ? "ONNX model" : d->short_name,
                   model ? "subgraph depth limit"
                         : "far deeper than a sequence or optional of tensors"};
    return scan_message(d, p, p + size, 0, max_levels, &w, err);
}
