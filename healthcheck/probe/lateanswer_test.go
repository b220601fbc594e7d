package probe

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
)

// scriptedPipe is a stdio conversation whose server answers in a set
// order: discover is late (unanswered within the probe's wait), then the
// queued answers arrive as scripted, whatever was asked.
type scriptedPipe struct {
	queued []*message // the answers still to come, in order
}

func (s *scriptedPipe) call(ctx context.Context, id int64, method string, _ any) (*message, error) {
	if method == methodDiscover {
		<-ctx.Done() // the late discover: its answer is queued
		return nil, ctx.Err()
	}
	if m, err := s.await(ctx, id); err == nil {
		return m, nil
	}
	return &message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Result: json.RawMessage(`{"tools":[]}`)}, nil
}
func (s *scriptedPipe) notify(context.Context, string) error { return nil }
func (s *scriptedPipe) setProtocolVersion(string)            {}
func (s *scriptedPipe) send(int64, string, any) error        { return nil }
func (s *scriptedPipe) await(ctx context.Context, ids ...int64) (*message, error) {
	for i, m := range s.queued {
		for _, id := range ids {
			if m.answers(id) {
				s.queued = append(s.queued[:i:i], s.queued[i+1:]...)
				return m, nil
			}
		}
	}
	<-ctx.Done()
	return nil, errors.New("no answer: " + ctx.Err().Error())
}

// A server that answered the late discover as modern, and refused the
// initialize queued behind it, is modern, whichever of the two answers
// its scheduler sent first; a legacy server's refusal of initialize with
// no discover answer stays the verdict's reason.
func TestLateDiscoverDecidesOverARefusedInitialize(t *testing.T) {
	id := func(n int64) json.RawMessage { return json.RawMessage(strconv.FormatInt(n, 10)) }
	modern := &message{ID: id(discoverID), Result: json.RawMessage(
		`{"supportedVersions":["` + ModernProtocolVersion + `"],"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"late"}}}`)}
	refused := &message{ID: id(initializeID), Error: &rpcError{Code: 0, Message: `duplicate "initialize" received`}}
	tests := []struct {
		name    string
		answers []*message
		era     Era
	}{
		{"discover answered first", []*message{modern, refused}, Modern},
		{"initialize refused first", []*message{refused, modern}, Modern},
		{"initialize refused, no discover answer", []*message{refused}, Legacy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conv := &scriptedPipe{queued: append([]*message(nil), tt.answers...)}
			res, err := handshake(ctx, conv, Options{Timeout: 4 * time.Second}, time.Now(), true)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != Healthy || res.Era != tt.era {
				t.Fatalf("verdict %s, era %q (%s), want healthy, %q", res.Verdict, res.Era, res.Reason, tt.era)
			}
		})
	}
}
