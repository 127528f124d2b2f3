package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// MaxFileSize is the largest contract file Load and Parse accept: 1 MiB.
const MaxFileSize = 1 << 20

// parser carries the file name used in error messages.
type parser struct {
	file string
}

func (p *parser) errf(path fieldPath, format string, args ...any) *Error {
	return &Error{File: p.file, Path: string(path), Msg: fmt.Sprintf(format, args...)}
}

// Load reads the contract at path and resolves it for profile ("" for the
// base contract). Files larger than MaxFileSize and anything that is not a
// regular file are refused. Every failure is an *Error naming the file.
func Load(path, profile string) (*Resolved, error) {
	f, err := bounded.Open(path) // a FIFO does not hang, a device is refused
	var nr *bounded.NotRegularError
	switch {
	case errors.As(err, &nr):
		return nil, &Error{File: path, Msg: "not a regular file (" + nr.Kind() + ")"}
	case err != nil:
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", err), Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", err), Err: err}
	}
	if st.Size() > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file is %d bytes, larger than the limit of %d", st.Size(), MaxFileSize)}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", err), Err: err}
	}
	return Parse(path, data, profile)
}

// Parse parses and resolves a contract (YAML or JSON) for profile ("" for
// the base contract). file is used only in error messages.
//
// Parse stops at the first error and reports it as an *Error: problems
// found while reading YAML come first, then the schema violation that
// appears first in the file (by line and column), then semantic problems
// in a fixed order — defaults, checks in file order, criteria, references
// and dependency cycles, approval, then every profile in name order — so
// the same input always yields the same error. Every profile is resolved
// and checked, whichever one was asked for.
func Parse(file string, data []byte, profile string) (*Resolved, error) {
	p := &parser{file: file}
	if len(data) > MaxFileSize {
		return nil, p.errf("", "file is %d bytes, larger than the limit of %d", len(data), MaxFileSize)
	}
	if !utf8.Valid(data) {
		return nil, p.errf("", "not valid UTF-8")
	}
	doc, err := p.decodeYAML(data)
	if err != nil {
		return nil, err
	}
	if err := p.validateSchema(doc); err != nil {
		return nil, err
	}
	raw, err := p.decodeStrict(doc)
	if err != nil {
		return nil, err
	}
	return p.resolve(raw, profile)
}

// decodeStrict decodes the schema-valid generic value into the raw structs,
// refusing unknown fields (the schema already does; this keeps the structs
// honest).
func (p *parser) decodeStrict(doc *document) (*rawContract, error) {
	b, err := json.Marshal(doc.value)
	if err != nil {
		return nil, p.errf("", "cannot encode: %v", err)
	}
	var raw rawContract
	if err := strictjson.Decode(b, &raw); err != nil {
		return nil, p.errf("", "does not match the contract model: %v", err)
	}
	return &raw, nil
}

// Canonical returns the RFC 8785 canonical JSON of the resolved contract:
// the frozen contract.json of a run.
func (r *Resolved) Canonical() ([]byte, error) {
	return canon.Marshal(r)
}

// Hash returns the contract hash: "sha256:" + hex SHA-256 of Canonical().
func (r *Resolved) Hash() (string, error) {
	b, err := r.Canonical()
	if err != nil {
		return "", err
	}
	return canon.SumBytes(b), nil
}
