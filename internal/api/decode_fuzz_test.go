package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// requestBodies makes one of every type a route decodes its body into,
// customers' and agents' alike. TestFuzzedBodiesAreEveryDecodedBody holds
// it to the handlers.
func requestBodies() []any {
	return []any{
		&agentproto.RegisterRequest{}, &agentproto.Report{}, &agentproto.BenchResult{},
		&apiv1.AcademicApplyRequest{}, &apiv1.AcademicDecision{}, &apiv1.AddPriceVersionRequest{}, &apiv1.AddSSHKeyRequest{},
		&apiv1.BenchRunRequest{}, &apiv1.CertSettings{}, &apiv1.ChangePlanRequest{}, &apiv1.CordonGPURequest{},
		&apiv1.CreateInstanceRequest{}, &apiv1.CreatePaymentRequest{}, &apiv1.CreateTokenRequest{}, &apiv1.CreateVoucherRequest{},
		&apiv1.CreditRequest{}, &apiv1.FailoverRequest{}, &apiv1.SetStartupRequest{}, &apiv1.Fault{}, &apiv1.LoginRequest{}, &apiv1.MigrateRequest{},
		&apiv1.RedeemVoucherRequest{}, &apiv1.RegisterRequest{}, &apiv1.RepairGPURequest{}, &apiv1.SetSpendLimitsRequest{},
		&apiv1.SetWebhookRequest{}, &apiv1.SetZoneProbeRequest{}, &apiv1.SettlePaymentRequest{}, &apiv1.StartRequest{},
		&apiv1.UpgradeRequest{}, &apiv1.VerifyRequest{}, &apiv1.CreateJoinTokenRequest{}, &apiv1.HostResetRequest{}, &confirmEmailRequest{},
		&apiv1.PutBaseImageRequest{}, &apiv1.SetPrepullRequest{},
	}
}

// decodedInto finds, in the package's handlers, every `var NAME TYPE` that
// a later decodeJSON(..., &NAME) fills.
var decodedInto = regexp.MustCompile(`var (\w+) ([\w.]+)\n(?:[^\n]*\n){0,3}?[^\n]*decodeJSON\([^,]+, &(\w+)\)`)

// TestFuzzedBodiesAreEveryDecodedBody: a handler decoding a body of a type
// FuzzDecodeRequestBodies does not feed fails here.
func TestFuzzedBodiesAreEveryDecodedBody(t *testing.T) {
	fuzzed := map[string]bool{}
	for _, v := range requestBodies() {
		// The package's own types are named unqualified in its source.
		fuzzed[strings.TrimPrefix(strings.TrimPrefix(fmt.Sprintf("%T", v), "*"), "api.")] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls, found := 0, 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		calls += strings.Count(string(src), "decodeJSON(") - strings.Count(string(src), "func decodeJSON(")
		for _, m := range decodedInto.FindAllStringSubmatch(string(src), -1) {
			if m[1] != m[3] {
				continue
			}
			found++
			if !fuzzed[m[2]] {
				t.Errorf("%s decodes request bodies into %s, which FuzzDecodeRequestBodies does not feed: add it to requestBodies", name, m[2])
			}
		}
	}
	if found != calls {
		t.Errorf("found the type of %d of the %d decodeJSON calls: declare each target as `var x T` just before decoding into it", found, calls)
	}
}

// FuzzDecodeRequestBodies feeds every request body type arbitrary bytes:
// decoding never panics, refuses with the invalid code and a message, and
// what it accepts re-encodes to JSON that decodes again to the same value.
func FuzzDecodeRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"gpu_type":"rtx4090-24g","gpu_count":1,"image":"ubuntu:24.04"}`,
		`{"join_token":"t","name":"h1","zone":"cd-tianfu-a","gpus":[{"uuid":"GPU-1","index":0}]}`,
		`{"report_id":"r","at":"2025-01-01T00:00:00+08:00","runtime":"docker","gpus":[],"instances":[]}`,
		`{"job_id":"bj-1","state":"passed","records":["{}"]}`,
		`{"note":"n","price_list":{"a":[1,2,{"b":null}]}}`,
		`{"amount_fen":9223372036854775807}`, `{"amount_fen":9223372036854775808}`, `{"expires_at":"0000-01-01T00:00:00Z"}`,
		`{"gpu_count":1e400}`, `{"name":"\ud800"}`, `[]`, `null`, `{}{}`, `{"a":1}`, "\xff\xfe", `{"gpu_count":-0}`, `"x"`,
	} {
		for i := range requestBodies() {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		targets := requestBodies()
		v := targets[int(which)%len(targets)]
		if err := decodeJSON(body, v); err != nil {
			if !gpurent.IsCode(err, gpurent.CodeInvalid) || gpurent.ErrorMessage(err) == "" {
				t.Fatalf("decodeJSON(%q) into %T: %v (code %s), want an invalid error with a message", body, v, err, gpurent.ErrorCode(err))
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("decodeJSON accepted invalid JSON %q into %T", body, v)
		}
		once, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q into %T, which does not re-encode: %v", body, v, err)
		}
		again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := decodeJSON(once, again); err != nil {
			t.Fatalf("%T re-encoded as %s does not decode: %v", v, once, err)
		}
		twice, err := json.Marshal(again)
		if err != nil || string(twice) != string(once) {
			t.Fatalf("%T does not round-trip: %s then %s (%v)", v, once, twice, err)
		}
	})
}

// FuzzLogsQuery feeds GET /instances/{id}/logs any query string: it never
// panics, and what it accepts is within bounds.
func FuzzLogsQuery(f *testing.F) {
	for _, q := range []string{"", "follow=true&since=10m&tail=50", "since=2026-12-02T03:04:05Z", "tail=-1", "since=-5m",
		"since=9999999h", "follow=1&follow=0", "tail=100001", "%zz", "since=2026-13-40T99:99:99Z"} {
		f.Add(q)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest("GET", "/api/v1/instances/i-x/logs", nil)
		r.URL.RawQuery = q
		req, err := logsQuery(r, now)
		if err != nil {
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("%q: error %v is not invalid", q, err)
			}
			return
		}
		if req.Tail < 0 || req.Tail > MaxLogsTail {
			t.Fatalf("%q: tail %d accepted", q, req.Tail)
		}
		if !req.Since.IsZero() && req.Since.Location() != time.UTC {
			t.Fatalf("%q: since %v not in UTC", q, req.Since)
		}
	})
}
