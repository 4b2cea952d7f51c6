package builtin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

var (
	src4 = netip.MustParseAddrPort("192.0.2.10:40000")
	dst4 = netip.MustParseAddrPort("198.51.100.1:443")
	src6 = netip.MustParseAddrPort("[2001:db8::10]:40000")
	dst6 = netip.MustParseAddrPort("[2001:db8::1]:443")
)

// encode is AppendProxyHeader for headers the tests know to be encodable.
func encode(h ProxyHeader) []byte {
	b, err := AppendProxyHeader(nil, h)
	if err != nil {
		panic(err)
	}
	return b
}

// sealCRC sets the value of b's last TLV, a CRC32C one, to b's checksum.
func sealCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[len(b)-4:], 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b, crc32cTable))
	return b
}

// rawHeader is a v2 prefix with the given bytes and length field, then body,
// whatever its length: for headers the encoder would not write.
func rawHeader(cmd, fam byte, length int, body string) []byte {
	b := append(proxySignature[:], cmd, fam, byte(length>>8), byte(length))
	return append(b, body...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// addrs4 is the 12-byte address block of src4 and dst4.
var addrs4 = string(encode(ProxyHeader{Source: src4, Destination: dst4})[proxyPrefixLen:])

// proxyCase is a connection's first bytes and what a receiver with the
// default limits makes of them: want when reason is reasonNone.
type proxyCase struct {
	name   string
	in     []byte
	want   ProxyHeader
	reason proxyReason
}

var proxyCases = []proxyCase{
	{name: "v4", in: encode(ProxyHeader{Source: src4, Destination: dst4}),
		want: ProxyHeader{Source: src4, Destination: dst4}},
	{name: "v6", in: encode(ProxyHeader{Source: src6, Destination: dst6}),
		want: ProxyHeader{Source: src6, Destination: dst6}},
	{name: "v4 mapped in v6", in: encode(ProxyHeader{
		Source: netip.MustParseAddrPort("[::ffff:192.0.2.10]:1"), Destination: netip.MustParseAddrPort("[::ffff:198.51.100.1]:2")}),
		want: ProxyHeader{Source: netip.MustParseAddrPort("[::ffff:192.0.2.10]:1"), Destination: netip.MustParseAddrPort("[::ffff:198.51.100.1]:2")}},
	{name: "v4 TLVs", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("h2")}, {Type: 0x02, Value: []byte("cache.example")}, {Type: 0x04}, {Type: 0xE0, Value: []byte{0}}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
			{Type: 0x01, Value: []byte("h2")}, {Type: 0x02, Value: []byte("cache.example")}, {Type: 0x04}, {Type: 0xE0, Value: []byte{0}}}}},
	{name: "v6 TLVs CRC32C", in: sealCRC(encode(ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: make([]byte, 4)}}})),
		want: ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
			{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: binary.BigEndian.AppendUint32(nil, 0x7c09eac9)}}}},
	{name: "v4 SSL TLV 2 KiB", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: bytes.Repeat([]byte{0xAB}, 2048)}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: bytes.Repeat([]byte{0xAB}, 2048)}}}},
	{name: "v4 at the length limit", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x04, Value: make([]byte, 4096-12-3)}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x04, Value: make([]byte, 4096-12-3)}}}},
	{name: "unspec", in: encode(ProxyHeader{}), want: ProxyHeader{}},
	{name: "unspec TLVs", in: encode(ProxyHeader{TLVs: []ProxyTLV{{Type: 0x05, Value: []byte("id-1")}}}),
		want: ProxyHeader{TLVs: []ProxyTLV{{Type: 0x05, Value: []byte("id-1")}}}},
	{name: "local", in: encode(ProxyHeader{Local: true}), want: ProxyHeader{Local: true}},
	{name: "local with addresses and TLVs", in: encode(ProxyHeader{Local: true, Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x01, Value: []byte("h2")}}}),
		want: ProxyHeader{Local: true}},
	{name: "local unknown family", in: rawHeader(0x20, 0x41, 3, "abc"), want: ProxyHeader{Local: true}},

	{name: "empty", in: nil, reason: reasonEmpty},
	{name: "truncated signature", in: proxySignature[:7], reason: reasonTruncated},
	{name: "truncated prefix", in: cat(proxySignature[:], []byte{0x21}), reason: reasonTruncated},
	{name: "truncated addresses", in: encode(ProxyHeader{Source: src4, Destination: dst4})[:20], reason: reasonTruncated},
	{name: "truncated TLV", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 1, Value: []byte("h2")}}})[:30], reason: reasonTruncated},
	{name: "plain HTTP", in: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), reason: reasonSignature},
	{name: "TLS client hello", in: []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), reason: reasonSignature},
	{name: "signature last byte", in: cat(proxySignature[:11], []byte("X\x21\x11\x00\x0c"), []byte(addrs4)), reason: reasonSignature},
	{name: "v1 TCP4", in: []byte("PROXY TCP4 192.0.2.10 198.51.100.1 40000 443\r\nGET / HTTP/1.1\r\n\r\n"), reason: reasonV1},
	{name: "v1 UNKNOWN", in: []byte("PROXY UNKNOWN\r\n"), reason: reasonV1},
	{name: "v1 cut short", in: []byte("PROX"), reason: reasonV1},
	{name: "version 1", in: rawHeader(0x11, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "version 3", in: rawHeader(0x31, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "command 2", in: rawHeader(0x22, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "command 15", in: rawHeader(0x2F, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "family unknown", in: rawHeader(0x21, 0x41, 12, addrs4), reason: reasonFamily},
	{name: "transport unknown", in: rawHeader(0x21, 0x13, 12, addrs4), reason: reasonFamily},
	{name: "unspec stream", in: rawHeader(0x21, 0x01, 0, ""), reason: reasonFamily},
	{name: "UDP over IPv4", in: rawHeader(0x21, famUDP4, 12, addrs4), reason: reasonFamily},
	{name: "UNIX stream", in: rawHeader(0x21, famUnixStream, 216, strings.Repeat("\x00", 216)), reason: reasonFamily},
	{name: "length short of v4", in: rawHeader(0x21, famTCP4, 4, addrs4[:4]), reason: reasonLength},
	{name: "length short of v6", in: rawHeader(0x21, famTCP6, 12, addrs4), reason: reasonLength},
	{name: "oversize TLV", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: make([]byte, 4096)}}}), reason: reasonOversize},
	{name: "oversize without body", in: rawHeader(0x21, famTCP4, 0xFFFF, ""), reason: reasonOversize},
	{name: "oversize local", in: rawHeader(0x20, famUnspec, 5000, ""), reason: reasonOversize},
	{name: "TLV shorter than 3 bytes", in: rawHeader(0x21, famTCP4, 14, addrs4+"\x01\x00"), reason: reasonTLV},
	{name: "TLV longer than the rest", in: rawHeader(0x21, famTCP4, 17, addrs4+"\x02\x00\x0aab"), reason: reasonTLV},
	{name: "TLV after a good one", in: rawHeader(0x21, famUnspec, 8, "\x01\x00\x02h2\x02\x00\x09"), reason: reasonTLV},
	{name: "CRC32C of 3 bytes", in: rawHeader(0x21, famTCP4, 18, addrs4+"\x03\x00\x03abc"), reason: reasonTLV},
	{name: "CRC32C twice", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
		{Type: tlvCRC32C, Value: make([]byte, 4)}, {Type: tlvCRC32C, Value: make([]byte, 4)}}}), reason: reasonTLV},
	{name: "CRC32C wrong", in: func() []byte {
		b := sealCRC(encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: tlvCRC32C, Value: make([]byte, 4)}}}))
		b[proxyPrefixLen+3] ^= 1 // the claimed source address
		return b
	}(), reason: reasonChecksum},
}

func TestProxyHeaderCases(t *testing.T) {
	const after = "GET / HTTP/1.1\r\n\r\n"
	for _, tc := range proxyCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.reason == reasonNone {
				in = cat(in, []byte(after))
			}
			// Bytes may come in any pieces: whole, or one at a time.
			for _, split := range []bool{false, true} {
				var r io.Reader = bytes.NewReader(in)
				if split {
					r = iotest.OneByteReader(r)
				}
				h, err := readProxyHeader(r, DefaultProxyMaxHeaderBytes)
				if tc.reason != reasonNone {
					var pe *proxyError
					if !errors.As(err, &pe) || pe.reason != tc.reason {
						t.Fatalf("split %v: got %#v, error %v: want reason %d", split, h, err, tc.reason)
					}
					continue
				}
				if err != nil {
					t.Fatalf("split %v: %v", split, err)
				}
				if !reflect.DeepEqual(h, tc.want) {
					t.Fatalf("split %v: got %+v, want %+v", split, h, tc.want)
				}
				if rest, _ := io.ReadAll(r); string(rest) != after {
					t.Fatalf("split %v: left %q after the header, want %q", split, rest, after)
				}
			}
		})
	}
}

func TestProxyHeaderCRC32C(t *testing.T) {
	// The checksum sealCRC computes is the one readProxyHeader checks; pin
	// it to a value computed independently (a bitwise CRC-32C in Python,
	// reflected polynomial 0x82F63B78, checked against the standard
	// "123456789" -> 0xE3069283) so the two cannot agree on a wrong sum.
	b := sealCRC(encode(ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: make([]byte, 4)}}}))
	if got := binary.BigEndian.Uint32(b[len(b)-4:]); got != 0x7c09eac9 {
		t.Fatalf("CRC32C 0x%08x, want 0x7c09eac9", got)
	}
}

func TestAppendProxyHeaderErrors(t *testing.T) {
	for _, h := range []ProxyHeader{
		{Source: src4, Destination: dst6},
		{Source: src4},
		{Destination: dst6},
		{TLVs: []ProxyTLV{{Type: 1, Value: make([]byte, 0x10000)}}},
		{Source: src6, Destination: dst6, TLVs: []ProxyTLV{{Type: 1, Value: make([]byte, 0xFFFF)}}},
	} {
		if b, err := AppendProxyHeader([]byte("x"), h); err == nil || string(b) != "x" {
			t.Errorf("AppendProxyHeader(%v, %v, %d TLVs) = %d bytes, %v: want an error and b unchanged", h.Source, h.Destination, len(h.TLVs), len(b), err)
		}
	}
}

func FuzzProxyHeader(f *testing.F) {
	for _, tc := range proxyCases {
		f.Add(tc.in)
		f.Add(cat(tc.in, []byte("GET / HTTP/1.1\r\n\r\n")))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, err := readProxyHeader(r, DefaultProxyMaxHeaderBytes)
		n := len(in) - r.Len()
		// The result does not depend on how the bytes arrive.
		h1, err1 := readProxyHeader(iotest.OneByteReader(bytes.NewReader(in)), DefaultProxyMaxHeaderBytes)
		if err != nil {
			var pe, pe1 *proxyError
			if !errors.As(err, &pe) || pe.reason <= reasonNone || pe.reason >= numReasons {
				t.Fatalf("error %v has no reason", err)
			}
			if !errors.As(err1, &pe1) || pe1.reason != pe.reason {
				t.Fatalf("whole: %v; byte by byte: %v", err, err1)
			}
			return
		}
		if err1 != nil || !reflect.DeepEqual(h, h1) {
			t.Fatalf("whole: %+v; byte by byte: %+v, %v", h, h1, err1)
		}
		if n > proxyPrefixLen+DefaultProxyMaxHeaderBytes {
			t.Fatalf("read %d bytes, over the limit", n)
		}
		enc, err := AppendProxyHeader(nil, h)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", h, err)
		}
		if h.Local {
			// A LOCAL header's family, addresses and TLVs are dropped, so
			// only the meaning survives a round trip.
			if !reflect.DeepEqual(h, ProxyHeader{Local: true}) {
				t.Fatalf("LOCAL header kept %+v", h)
			}
			if h2, err := readProxyHeader(bytes.NewReader(enc), DefaultProxyMaxHeaderBytes); err != nil || !reflect.DeepEqual(h2, h) {
				t.Fatalf("re-read LOCAL: %+v, %v", h2, err)
			}
			return
		}
		if !bytes.Equal(enc, in[:n]) {
			t.Fatalf("re-encoded\n%x\nread\n%x", enc, in[:n])
		}
	})
}
