package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gpurent/gpurent"
)

// maxBodyBytes bounds every request body.
const maxBodyBytes = 1 << 20

// readBody reads a JSON request body: the content type must be JSON (an
// empty body may omit it) and the body at most maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "request body is larger than %d bytes", maxBodyBytes)
		}
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "reading the request body failed")
	}
	if len(body) == 0 && r.Header.Get("Content-Type") == "" {
		return body, nil
	}
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return body, nil
}

// checkJSONContentType accepts application/json (any charset parameter must
// be UTF-8).
func checkJSONContentType(ct string) error {
	if ct == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "Content-Type header is required: send application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != contentJSON {
		return gpurent.Errorf(gpurent.CodeInvalid, "Content-Type %q is not supported: send application/json", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return gpurent.Errorf(gpurent.CodeInvalid, "charset %q is not supported: send UTF-8", cs)
	}
	return nil
}

// decodeJSON decodes exactly one JSON value into v: unknown fields, trailing
// data and type mismatches are rejected with a message that says where.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "request body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return gpurent.Errorf(gpurent.CodeInvalid, "request body must hold a single JSON value, found more after it")
	}
	return nil
}

// decodeError turns a json error into a clear invalid error.
func decodeError(err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntaxErr):
		return gpurent.WrapError(gpurent.CodeInvalid, err, "malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return gpurent.WrapError(gpurent.CodeInvalid, err, "malformed JSON: the body ends too early")
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return gpurent.WrapError(gpurent.CodeInvalid, err, "field %q must be %s, not JSON %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return gpurent.WrapError(gpurent.CodeInvalid, err, "request body must be a JSON object, not %s", typeErr.Value)
	default:
		// Unknown fields and other decoder complaints have no typed error;
		// their text names the field and is safe to show.
		return gpurent.WrapError(gpurent.CodeInvalid, err, "invalid JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	default:
		return fmt.Sprintf("a %s", kind)
	}
}
