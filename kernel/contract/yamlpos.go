package contract

import (
	"errors"

	goccy "github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// syntaxError is what goccy/go-yaml's parser returns for a syntax error:
// its message and the token at fault.
type syntaxError interface {
	GetMessage() string
	GetToken() *token.Token
}

// syntaxAt locates a syntax error in data, which go.yaml.in/yaml/v3 has
// refused. yaml/v3 names the line where the enclosing construct starts
// (counted from 0 for parser errors) rather than where the mistake is: a
// mis-indented list item is reported on the line above the list. A second
// parser, goccy/go-yaml's, reports the token at fault; it only ever reads
// a document yaml/v3 refused, bounded by MaxFileSize, and a panic in it
// counts as "not located". ok is false when it finds nothing wrong or
// cannot say where.
func syntaxAt(data []byte) (line, col int, msg string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := goccy.ParseBytes(data, 0)
	var se syntaxError
	if err == nil || !errors.As(err, &se) {
		return 0, 0, "", false
	}
	tk := se.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return 0, 0, "", false
	}
	return tk.Position.Line, tk.Position.Column, se.GetMessage(), true
}
