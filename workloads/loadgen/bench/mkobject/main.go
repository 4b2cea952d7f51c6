// Command mkobject writes a file of pseudo-random bytes for the load
// generator's benchmark and prints its CRC-32C (Castagnoli) as 8 lowercase
// hex digits, the form the generator checks in X-Hlsbench-Crc32c.
//
// Usage: mkobject [-seed N] FILE SIZE
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkobject", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed of the byte stream (the same seed gives the same file)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "mkobject: want FILE SIZE, for example: mkobject obj.bin 4194304")
		return 2
	}
	size, err := strconv.ParseInt(fs.Arg(1), 10, 64)
	if err != nil || size < 0 {
		fmt.Fprintf(stderr, "mkobject: SIZE %q: want a byte count of 0 or more\n", fs.Arg(1))
		return 2
	}
	sum, err := write(fs.Arg(0), size, *seed)
	if err != nil {
		fmt.Fprintf(stderr, "mkobject: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%08x\n", sum)
	return 0
}

// write fills path with size bytes from a seeded ChaCha8 stream and returns
// their CRC-32C.
func write(path string, size int64, seed uint64) (sum uint32, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create object: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close object: %w", cerr))
		}
	}()
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	w := bufio.NewWriter(io.MultiWriter(f, h))
	if _, err := io.CopyN(w, rand.NewChaCha8(key), size); err != nil {
		return 0, fmt.Errorf("write object: %w", err)
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("write object: %w", err)
	}
	return h.Sum32(), nil
}
