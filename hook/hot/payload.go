package hot

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Payload is the part of a hook's input nightwatch needs. tool_input is
// written by the model and is never parsed: it is skipped byte by byte, so a
// 50 MiB file in it costs time, not memory, and cannot make a false block.
// Only for a job that keeps a side-effect ledger are its first
// MaxInputBytes kept, and all of it hashed (DecodeInput).
type Payload struct {
	Event     string
	ToolName  string
	SessionID string
	Cwd       string
	ToolUseID string
	// Error is PostToolUseFailure's error text (its first MaxErrorBytes).
	Error string
	// Server and ServerSource are mcp_server.name and .source, which
	// Claude Code 2.1.332 and later put in every MCP hook payload: the
	// server as the client knows it, set by the client, not the model.
	Server       string
	ServerSource string
	// HasError and HasToolResponse say which keys were present, so the
	// event can be inferred when hook_event_name is missing.
	HasError        bool
	HasToolResponse bool
	// Input is tool_input's raw JSON, kept only when the caller asked
	// (DecodeInput: the job keeps a side-effect ledger) and at most
	// MaxInputBytes; InputCut says it was larger, and then Input is empty
	// and InputSum is the SHA-256 of all of it.
	Input    string
	InputSum [sha256.Size]byte
	InputCut bool
}

// Limits on the strings kept. Longer values are read through and cut, never
// refused: the decision never depends on the payload's size.
const (
	MaxFieldBytes = 4 << 10
	MaxErrorBytes = 16 << 10
	MaxInputBytes = 1 << 20
)

// ErrNotObject says the input was not a JSON object.
var ErrNotObject = errors.New("hook input is not a JSON object")

// Decode reads one JSON object from r, keeping only the keys nightwatch
// uses, then drains r so Claude Code never sees a broken pipe.
func Decode(r io.Reader) (*Payload, error) { return decode(r, false) }

// DecodeInput is Decode that also keeps tool_input (Payload.Input), for a
// job's side-effect ledger.
func DecodeInput(r io.Reader) (*Payload, error) { return decode(r, true) }

func decode(r io.Reader, keepInput bool) (*Payload, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10), keepInput: keepInput}
	p, err := d.object()
	_, _ = io.Copy(io.Discard, d.r)
	if err != nil {
		return p, fmt.Errorf("read hook input at byte %d: %w", d.off, err)
	}
	return p, nil
}

type decoder struct {
	r   *bufio.Reader
	off int64
	// keepInput: tool_input's bytes go to tee while it is read.
	keepInput bool
	tee       *inputTee
}

// inputTee keeps the first MaxInputBytes of a value as it streams by and
// hashes all of it.
type inputTee struct {
	buf []byte
	sum hash.Hash
	cut bool
}

func (t *inputTee) add(b ...byte) {
	if !t.cut && len(t.buf)+len(b) <= MaxInputBytes {
		t.buf = append(t.buf, b...)
		return
	}
	// Too large to keep: hashed from here on, what was kept first. An
	// input that fits costs a copy, never a hash.
	if !t.cut {
		t.cut = true
		t.sum.Write(t.buf)
		t.buf = nil
	}
	t.sum.Write(b)
}

func (d *decoder) next() (byte, error) {
	c, err := d.r.ReadByte()
	if err == io.EOF {
		return 0, io.ErrUnexpectedEOF
	}
	if err == nil {
		d.off++
		if d.tee != nil {
			d.tee.add(c)
		}
	}
	return c, err
}

func (d *decoder) nonSpace() (byte, error) {
	for {
		c, err := d.next()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func (d *decoder) object() (*Payload, error) {
	p := &Payload{}
	c, err := d.nonSpace()
	if err != nil {
		return p, err
	}
	if c != '{' {
		return p, ErrNotObject
	}
	c, err = d.nonSpace()
	if err != nil {
		return p, err
	}
	if c == '}' {
		return p, nil
	}
	for {
		if c != '"' {
			return p, fmt.Errorf("expected a key, found %q", c)
		}
		key, err := d.str(256)
		if err != nil {
			return p, err
		}
		if c, err = d.nonSpace(); err != nil {
			return p, err
		} else if c != ':' {
			return p, fmt.Errorf("expected ':' after key %q", key)
		}
		if err := d.field(p, key); err != nil {
			return p, fmt.Errorf("%s: %w", key, err)
		}
		c, err = d.nonSpace()
		if err != nil {
			return p, err
		}
		if c == '}' {
			return p, nil
		}
		if c != ',' {
			return p, fmt.Errorf("expected ',' or '}' after %q", key)
		}
		if c, err = d.nonSpace(); err != nil {
			return p, err
		}
	}
}

func (d *decoder) field(p *Payload, key string) error {
	var dst *string
	limit := MaxFieldBytes
	switch key {
	case "hook_event_name":
		dst = &p.Event
	case "tool_name":
		dst = &p.ToolName
	case "session_id":
		dst = &p.SessionID
	case "cwd":
		dst = &p.Cwd
	case "tool_use_id":
		dst = &p.ToolUseID
	case "error":
		p.HasError = true
		dst, limit = &p.Error, MaxErrorBytes
	case "tool_response":
		p.HasToolResponse = true
	}
	c, err := d.nonSpace()
	if err != nil {
		return err
	}
	if key == "tool_input" && d.keepInput {
		d.tee = &inputTee{sum: sha256.New()}
		d.tee.add(c)
		err := d.skip(c)
		p.InputCut = d.tee.cut
		if p.InputCut {
			copy(p.InputSum[:], d.tee.sum.Sum(nil))
		} else {
			p.Input = string(d.tee.buf)
		}
		d.tee = nil
		return err
	}
	if key == "mcp_server" {
		switch c {
		case '{':
			return d.mcpServer(p)
		case '"':
			// Not a shape Claude Code writes; read as the name all the same
			// (it is a top-level key, set by the client).
			s, err := d.str(MaxFieldBytes)
			p.Server = s
			return err
		}
	}
	if dst != nil && c == '"' {
		s, err := d.str(limit)
		*dst = s
		return err
	}
	return d.skip(c)
}

// mcpServer reads the object {"name": …, "source": …} whose opening brace
// was consumed; other keys are skipped.
func (d *decoder) mcpServer(p *Payload) error {
	c, err := d.nonSpace()
	if err != nil || c == '}' {
		return err
	}
	for {
		if c != '"' {
			return fmt.Errorf("expected a key, found %q", c)
		}
		key, err := d.str(256)
		if err != nil {
			return err
		}
		if c, err = d.nonSpace(); err != nil {
			return err
		} else if c != ':' {
			return fmt.Errorf("expected ':' after key %q", key)
		}
		if c, err = d.nonSpace(); err != nil {
			return err
		}
		var dst *string
		switch key {
		case "name":
			dst = &p.Server
		case "source":
			dst = &p.ServerSource
		}
		if dst != nil && c == '"' {
			if *dst, err = d.str(MaxFieldBytes); err != nil {
				return err
			}
		} else if err := d.skip(c); err != nil {
			return err
		}
		if c, err = d.nonSpace(); err != nil {
			return err
		}
		if c == '}' {
			return nil
		}
		if c != ',' {
			return fmt.Errorf("expected ',' or '}' after %q", key)
		}
		if c, err = d.nonSpace(); err != nil {
			return err
		}
	}
}

// str reads the rest of a string whose opening quote was consumed, keeping
// at most limit bytes of its decoded text.
func (d *decoder) str(limit int) (string, error) {
	var buf []byte
	keep := func(b ...byte) {
		if len(buf) < limit {
			buf = append(buf, b...)
		}
	}
	for {
		c, err := d.next()
		if err != nil {
			return "", err
		}
		switch {
		case c == '"':
			if len(buf) > limit {
				buf = buf[:limit]
			}
			for len(buf) > 0 && !utf8.Valid(buf) {
				buf = buf[:len(buf)-1]
			}
			return string(buf), nil
		case c < 0x20:
			return "", fmt.Errorf("control character in string")
		case c != '\\':
			keep(c)
			continue
		}
		e, err := d.next()
		if err != nil {
			return "", err
		}
		switch e {
		case '"', '\\', '/':
			keep(e)
		case 'b':
			keep('\b')
		case 'f':
			keep('\f')
		case 'n':
			keep('\n')
		case 'r':
			keep('\r')
		case 't':
			keep('\t')
		case 'u':
			r, err := d.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r = d.lowSurrogate(r)
			}
			var tmp [4]byte
			keep(tmp[:utf8.EncodeRune(tmp[:], r)]...)
		default:
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
}

func (d *decoder) hex4() (rune, error) {
	var h [4]byte
	for i := range h {
		c, err := d.next()
		if err != nil {
			return 0, err
		}
		h[i] = c
	}
	n, err := strconv.ParseUint(string(h[:]), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("bad \\u escape")
	}
	return rune(n), nil
}

// lowSurrogate completes a UTF-16 pair when the next escape is its second
// half; a lone half becomes U+FFFD, as encoding/json does.
func (d *decoder) lowSurrogate(hi rune) rune {
	if b, err := d.r.Peek(6); err == nil && b[0] == '\\' && b[1] == 'u' {
		if n, err := strconv.ParseUint(string(b[2:6]), 16, 32); err == nil {
			if r := utf16.DecodeRune(hi, rune(n)); r != utf8.RuneError {
				_, _ = d.r.Discard(6)
				d.off += 6
				return r
			}
		}
	}
	return utf8.RuneError
}

// skip reads past one value whose first byte is c without keeping it.
// Nesting is walked with an explicit stack of one bit per level (object or
// array), never by recursion and without a depth limit: tool_input is the
// model's, and a deeply nested one must be decided like any other, not
// turned into an unparsable payload that lets a call to a dead server
// through unchecked. A million levels cost 125 KiB.
func (d *decoder) skip(c byte) error {
	var stack []uint64 // bit i set: level i is an object
	depth := 0
	inObject := func() bool { return stack[(depth-1)/64]&(1<<((depth-1)%64)) != 0 }
	// key reads `"key" :` and returns the first byte of the value after it;
	// n is the byte where the key should start.
	key := func(n byte) (byte, error) {
		if n != '"' {
			return 0, fmt.Errorf("expected a key, found %q", n)
		}
		if err := d.skipString(); err != nil {
			return 0, err
		}
		if n, err := d.nonSpace(); err != nil {
			return 0, err
		} else if n != ':' {
			return 0, fmt.Errorf("expected ':'")
		}
		return d.nonSpace()
	}
	for {
		// c is the first byte of a value.
		switch c {
		case '"':
			if err := d.skipString(); err != nil {
				return err
			}
		case '{', '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			n, err := d.nonSpace()
			if err != nil {
				return err
			}
			if n != closer {
				if depth/64 >= len(stack) {
					stack = append(stack, 0)
				}
				depth++
				if c == '{' {
					stack[(depth-1)/64] |= 1 << ((depth - 1) % 64)
					if c, err = key(n); err != nil {
						return err
					}
				} else {
					stack[(depth-1)/64] &^= 1 << ((depth - 1) % 64)
					c = n
				}
				continue
			}
		default:
			if err := d.skipScalar(c); err != nil {
				return err
			}
		}
		// A value ended: close the containers it ended, or go on to the
		// next element of the innermost one.
		for {
			if depth == 0 {
				return nil
			}
			closer := byte(']')
			if inObject() {
				closer = '}'
			}
			n, err := d.nonSpace()
			if err != nil {
				return err
			}
			if n == closer {
				depth--
				continue
			}
			if n != ',' {
				return fmt.Errorf("expected ',' or %q", closer)
			}
			if n, err = d.nonSpace(); err != nil {
				return err
			}
			if inObject() {
				if c, err = key(n); err != nil {
					return err
				}
			} else {
				c = n
			}
			break
		}
	}
}

func (d *decoder) skipString() error {
	escaped := false
	for {
		// ReadSlice scans the buffer without copying: a huge string is
		// passed over in 64 KiB steps, whatever its size.
		chunk, err := d.r.ReadSlice('"')
		d.off += int64(len(chunk))
		if d.tee != nil {
			d.tee.add(chunk...)
		}
		for _, b := range chunk {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				return nil
			}
		}
		switch {
		case err == nil, err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			return io.ErrUnexpectedEOF
		default:
			return err
		}
	}
}

// skipScalar reads past a literal or a number whose first byte is c. A
// number is checked against JSON's grammar as it streams by, with no limit
// on its length: JSON has none, and a long number in tool_input must not
// turn a call into an unparsable payload that goes ahead unchecked.
func (d *decoder) skipScalar(c byte) error {
	switch c {
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	state := numberStep(numStart, c)
	for {
		b, err := d.r.Peek(1)
		if err != nil || isDelim(b[0]) {
			break
		}
		c, _ = d.next()
		if state = numberStep(state, c); state == numBad {
			break
		}
	}
	switch state {
	case numInt, numZero, numFrac, numExp:
		return nil
	}
	return fmt.Errorf("bad number")
}

// literal reads the rest of word, whose first byte was consumed.
func (d *decoder) literal(word string) error {
	for i := 1; i < len(word); i++ {
		c, err := d.next()
		if err != nil {
			return err
		}
		if c != word[i] {
			return fmt.Errorf("bad value: expected %s", word)
		}
	}
	if b, err := d.r.Peek(1); err == nil && !isDelim(b[0]) {
		return fmt.Errorf("bad value after %s", word)
	}
	return nil
}

// States of a JSON number: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?
const (
	numBad = iota
	numStart
	numMinus
	numInt  // accepting
	numZero // accepting: a leading 0 takes no more digits
	numDot
	numFrac // accepting
	numE
	numESign
	numExp // accepting
)

func numberStep(state int, c byte) int {
	digit := c >= '0' && c <= '9'
	switch state {
	case numStart, numMinus:
		switch {
		case c == '-' && state == numStart:
			return numMinus
		case c == '0':
			return numZero
		case digit:
			return numInt
		}
	case numInt, numZero:
		switch {
		case digit && state == numInt:
			return numInt
		case c == '.':
			return numDot
		case c == 'e' || c == 'E':
			return numE
		}
	case numDot, numFrac:
		switch {
		case digit:
			return numFrac
		case (c == 'e' || c == 'E') && state == numFrac:
			return numE
		}
	case numE:
		switch {
		case c == '+' || c == '-':
			return numESign
		case digit:
			return numExp
		}
	case numESign, numExp:
		if digit {
			return numExp
		}
	}
	return numBad
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
