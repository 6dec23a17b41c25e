package spanfile

import (
	"reflect"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// maxDecodeFactor bounds what decoding a record may allocate: about this
// many times the record's length, plus decodeSlack. A message costs its Go
// struct (about a hundred bytes) however few bytes encode it, so without a
// bound a record of empty Span messages (two bytes each) decodes to ~87
// times its size. Records this package writes decode to 2 to 6 times theirs
// (a span carries its name, step, times and duration); only crafted ones
// come near 16.
const maxDecodeFactor = 16

// decodeSlack is the estimate allowed on top of the factor, so that tiny
// records with one or two small messages always pass.
const decodeSlack = 4 << 10

// decodeCost estimates in bytes what unmarshalling b as md allocates: each
// message's struct, each element of a repeated field (counted twice, for
// the growth of its slice), and string, bytes and unknown field contents. It
// walks the wire format without allocating; the schema has no recursive
// message, so its recursion is at most three deep. Malformed input returns
// what it counted so far: proto.Unmarshal then reports the error itself.
func decodeCost(b []byte, md protoreflect.MessageDescriptor) int {
	cost := structSize(md)
	fields := md.Fields()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return cost
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return cost
		}
		v := b[:m]
		b = b[m:]
		fd := fields.ByNumber(num)
		switch {
		case fd == nil:
			cost += n + m // kept as unknown bytes
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if typ != protowire.BytesType {
				continue // a type mismatch: Unmarshal refuses it
			}
			body, k := protowire.ConsumeBytes(v)
			if k < 0 {
				continue
			}
			cost += decodeCost(body, fd.Message())
			if fd.IsList() {
				cost += 2 * 8
			}
		case typ == protowire.BytesType:
			body, k := protowire.ConsumeBytes(v)
			if k < 0 {
				continue
			}
			switch {
			case fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind:
				cost += len(body)
				if fd.IsList() {
					cost += 2 * 24
				}
			case fd.IsList():
				// A packed list: at most one element per byte.
				cost += 2 * 8 * len(body)
			}
		case fd.IsList():
			cost += 2 * 8
		}
	}
	return cost
}

var structSizes sync.Map // protoreflect.FullName -> int

// structSize is the allocation of one message of md: its generated Go
// struct, rounded up as the allocator's size classes do, or a generous
// guess for a message with no generated type.
func structSize(md protoreflect.MessageDescriptor) int {
	if v, ok := structSizes.Load(md.FullName()); ok {
		return v.(int)
	}
	size := 256
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		t := reflect.TypeOf(mt.Zero().Interface())
		if t.Kind() == reflect.Ptr {
			t = t.Elem()
		}
		size = int(t.Size())*5/4 + 16
	}
	structSizes.Store(md.FullName(), size)
	return size
}

// recordDescriptor is the descriptor decodeCost starts from.
var recordDescriptor = (&gpuspansv1.Record{}).ProtoReflect().Descriptor()
