package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func TestDecodeJSON(t *testing.T) {
	var r apiv1.CreateInstanceRequest
	if err := decodeJSON([]byte(" {\"gpu_type\":\"a\",\"gpu_count\":2,\"image\":\"i\"}\n\t "), &r); err != nil {
		t.Fatal(err)
	}
	if r.GPUType != "a" || r.GPUCount != 2 || r.Image != "i" {
		t.Fatalf("decoded %+v", r)
	}
	for _, bad := range []string{``, ` `, `null x`, `{}{}`, `{"gpu_type":1}`, `{"GPU_TYPE ":"a"}`, `{"gpu_count":1.5}`, `{`, `"str"`} {
		var v apiv1.CreateInstanceRequest
		err := decodeJSON([]byte(bad), &v)
		if !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("decodeJSON(%q) = %v, want invalid", bad, err)
		}
	}
}

func TestCheckJSONContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/json":                 true,
		"Application/JSON":                 true,
		"application/json; charset=utf-8":  true,
		"application/json;charset=UTF-8":   true,
		"application/json; charset=latin1": false,
		"application/jsonx":                false,
		"text/json":                        false,
		"":                                 false,
		"application/json; =":              false,
	} {
		if err := checkJSONContentType(ct); (err == nil) != ok {
			t.Errorf("checkJSONContentType(%q) = %v, want ok=%v", ct, err, ok)
		}
	}
}

// FuzzDecode feeds the request decoder arbitrary bodies: it must never
// panic, must answer only nil or an invalid error, and what it accepts must
// be exactly one JSON value the strict types can re-encode.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"gpu_type":"rtx4090-24g","gpu_count":1,"image":"ubuntu:24.04"}`,
		`{"email":"a@b.co","name":"A","password":"password1"}`,
		`{"report_id":"r","at":"2025-01-01T00:00:00Z","runtime":"docker","gpus":[],"instances":[]}`,
		`{"gpu_count":1e400}`, `{"name":"\ud800"}`, `[]`, `null`, `{}{}`, `{"a":1}`, "\xff\xfe", `{"gpu_count":-0}`,
		strings.Repeat(`[`, 10000),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		targets := []any{&apiv1.CreateInstanceRequest{}, &apiv1.RegisterRequest{}, &agentproto.Report{}, &apiv1.CreateTokenRequest{}}
		for _, v := range targets {
			err := decodeJSON(body, v)
			if err != nil {
				if !gpurent.IsCode(err, gpurent.CodeInvalid) {
					t.Fatalf("decodeJSON(%q) into %T: code %s, want invalid", body, v, gpurent.ErrorCode(err))
				}
				if gpurent.ErrorMessage(err) == "" {
					t.Fatalf("decodeJSON(%q): empty message", body)
				}
				continue
			}
			if !json.Valid(body) {
				t.Fatalf("decodeJSON accepted invalid JSON %q into %T", body, v)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("accepted %q into %T, which does not re-encode: %v", body, v, err)
			}
		}
	})
}
