package transparency

import (
	"reflect"
	"regexp"
	"testing"
	"unicode"
)

// messageValues is every string of a table by field name.
func messageValues(m *messages) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		out[v.Type().Field(i).Name] = v.Field(i).String()
	}
	return out
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestMessagesComplete holds the two tables to each other: no string is
// missing from either, each format takes the same arguments in both, the
// Chinese strings are Chinese and the English ones have no Chinese.
func TestMessagesComplete(t *testing.T) {
	en, zh := messageValues(messagesEN()), messageValues(messagesZH())
	verbs := regexp.MustCompile(`%[a-z]`)
	// Strings that are the same words in both languages, or name the other.
	notChinese := map[string]bool{"HTMLLang": true, "OtherLang": true, "OtherLabel": true,
		"ProbeGEMMBF16": false, "ProbeNCCL": false}
	for field, e := range en {
		z := zh[field]
		if e == "" || z == "" {
			t.Errorf("%s: en %q, zh %q: a string is missing", field, e, z)
			continue
		}
		if got, want := verbs.FindAllString(z, -1), verbs.FindAllString(e, -1); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: zh takes %v, en %v", field, got, want)
		}
		if field != "OtherLabel" && hasHan(e) {
			t.Errorf("%s: English %q has Chinese", field, e)
		}
		if !notChinese[field] && !hasHan(z) {
			t.Errorf("%s: Chinese %q has no Chinese", field, z)
		}
	}
	if messagesEN().OtherLang != LangZH || messagesZH().OtherLang != LangEN {
		t.Error("the language switch does not go to the other language")
	}
}

func TestProbeLabel(t *testing.T) {
	probes := []string{"gemm_bf16", "gemm_fp8", "copy_d2d", "copy_h2d", "copy_d2h", "p2p_bw", "resnet50_amp", "nccl_allreduce"}
	seen := map[string]bool{}
	for _, p := range probes {
		en, zh := ProbeLabel(p, LangEN), ProbeLabel(p, LangZH)
		if en == p || zh == p || en == zh || seen[en] || seen[zh] {
			t.Errorf("%s: labels en %q zh %q are not distinct human names", p, en, zh)
		}
		seen[en], seen[zh] = true, true
		if ProbeLabel(p, "fr") != en || ProbeLabel(p, "zh-CN") != zh {
			t.Errorf("%s: other language tags do not fall back", p)
		}
	}
	if ProbeLabel("tensor_fp4", LangZH) != "tensor_fp4" {
		t.Error("an unknown probe is not shown by its id")
	}
	if got := ProbeLabel("gemm_bf16", LangEN); got != "BF16 GEMM" {
		t.Errorf("gemm_bf16 in English is %q", got)
	}
}

func TestHashUUID(t *testing.T) {
	// SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.
	if got := HashUUID("abc"); got != "ba7816bf8f01cfea" {
		t.Errorf("HashUUID(abc) = %q", got)
	}
	a, b := HashUUID("GPU-5f2a9c1e-7b3d-4e8f-9a01-2c3d4e5f6a70"), HashUUID("GPU-5f2a9c1e-7b3d-4e8f-9a01-2c3d4e5f6a71")
	if len(a) != 16 || a == b || !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) {
		t.Errorf("hashes %q and %q", a, b)
	}
}
