package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// keyArg is the idempotency_key every tool that writes takes (module.yaml
// declares it on each): a retry of a call with it gets the first call's
// answer and writes nothing (store.Once).
type keyArg struct {
	IdempotencyKey string `json:"idempotency_key"`
}

// keyName is the argument's name.
const keyName = "idempotency_key"

// run runs a tool's code on checked arguments: as one keyed call when
// they carry an idempotency_key, else as it is.
func (s *Service) run(ctx context.Context, tool string, h handler, args json.RawMessage) (Result, error) {
	key, rest, err := splitKey(args)
	if err != nil || key == "" {
		return h.run(ctx, s, args)
	}
	k := store.Keyed{Me: s.Me, Tool: tool, Key: key, ArgsHash: hashArgs(rest)}
	var first Result
	ans, duplicate, err := s.DB.Once(ctx, k, func(ctx context.Context) (store.KeyedAnswer, error) {
		res, err := h.run(ctx, s, args)
		if err != nil {
			return store.KeyedAnswer{}, err
		}
		if first, err = s.finish(res); err != nil {
			return store.KeyedAnswer{}, err
		}
		return store.KeyedAnswer{JSON: string(first.JSON), Display: first.Display}, nil
	})
	switch {
	case err != nil:
		return Result{}, err
	case !duplicate:
		return first, nil
	}
	data := markDuplicate([]byte(ans.JSON))
	display := fmt.Sprintf("Duplicate: this call repeats one made at %s with the same idempotency_key and arguments — nothing was written; its answer was:\n\n%s",
		utcMinute(ans.At), ans.Display)
	return Result{Display: display, Value: json.RawMessage(data), JSON: data}, nil
}

// splitKey takes the idempotency_key out of checked arguments: the key,
// and the other arguments as checkArgs wrote them (one object, its keys
// sorted), which is what a retry must repeat.
func splitKey(args json.RawMessage) (key string, rest json.RawMessage, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return "", nil, err
	}
	raw, ok := m[keyName]
	if !ok {
		return "", args, nil
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", nil, err
	}
	delete(m, keyName)
	rest, err = json.Marshal(m)
	return key, rest, err
}

// hashArgs names a call's arguments: equal for the same arguments in any
// order or spacing (checkArgs wrote them with their keys sorted).
func hashArgs(rest json.RawMessage) string {
	sum := sha256.Sum256(rest)
	return hex.EncodeToString(sum[:])
}

// markDuplicate adds "duplicate": true to an answer's JSON object.
func markDuplicate(data []byte) []byte {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return data
	}
	body := bytes.TrimSpace(data[1 : len(data)-1])
	var b bytes.Buffer
	b.WriteByte('{')
	if len(body) > 0 {
		b.Write(body)
		b.WriteByte(',')
	}
	b.WriteString(`"duplicate":true}`)
	return b.Bytes()
}
