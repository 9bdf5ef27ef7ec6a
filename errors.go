package gpurent

import (
	"errors"
	"fmt"
)

// Code is the closed set of error kinds the system answers with. HTTPStatus
// maps each code to one HTTP status (CodeOfHTTPStatus maps back); callers
// branch on codes, never on messages.
type Code string

// The error codes. Adding one means adding it to HTTPStatus and
// CodeOfHTTPStatus too (TestHTTPStatusTable fails until it is).
const (
	CodeInvalid         Code = "invalid"
	CodeNotFound        Code = "not_found"
	CodeConflict        Code = "conflict"
	CodeUnauthorized    Code = "unauthorized"
	CodeForbidden       Code = "forbidden"
	CodeUnavailable     Code = "unavailable"
	CodePaymentRequired Code = "payment_required"
	CodeInternal        Code = "internal"
	// CodeTooManyRequests: a rate limit refused it; try again later.
	CodeTooManyRequests Code = "too_many_requests"
)

// Codes lists every code, for tables that must cover all of them.
func Codes() []Code {
	return []Code{CodeInvalid, CodeNotFound, CodeConflict, CodeUnauthorized,
		CodeForbidden, CodeUnavailable, CodePaymentRequired, CodeInternal, CodeTooManyRequests}
}

// Error is the one error type of the system. Message is safe to show to the
// caller; Err is the internal cause, kept for logs and errors.Is/As.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error whose message is safe to show.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError builds an Error with a safe message around an internal cause.
func WrapError(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// ErrorCode returns the code of the first *Error in err's chain; an error
// without one is internal, and nil has no code.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message safe to show for err. Internal errors never
// expose their cause.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != CodeInternal {
		return e.Message
	}
	return "internal error"
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }

// HTTPStatus is the one table from error codes to HTTP statuses: the status
// an answer carrying code has. A code outside the set is internal (500).
// (The statuses are written as numbers: the root package does not import
// net/http.)
func HTTPStatus(code Code) int {
	switch code {
	case CodeInvalid:
		return 400 // Bad Request
	case CodeUnauthorized:
		return 401 // Unauthorized
	case CodePaymentRequired:
		return 402 // Payment Required
	case CodeForbidden:
		return 403 // Forbidden
	case CodeNotFound:
		return 404 // Not Found
	case CodeConflict:
		return 409 // Conflict
	case CodeTooManyRequests:
		return 429 // Too Many Requests
	case CodeUnavailable:
		return 503 // Service Unavailable
	default:
		return 500 // Internal Server Error
	}
}

// CodeOfHTTPStatus is the code of an HTTP answer that names none (a proxy's
// error page, an answer without a problem body): the inverse of HTTPStatus
// on the statuses it gives, and the nearest code for the others. 422 is
// invalid; 408, 502 and 504, like 503, are unavailable (try again); any
// other 4xx is invalid (the request was refused as sent) and any other 5xx
// or anything outside 400-599 internal.
func CodeOfHTTPStatus(status int) Code {
	switch status {
	case 400, 422:
		return CodeInvalid
	case 401:
		return CodeUnauthorized
	case 402:
		return CodePaymentRequired
	case 403:
		return CodeForbidden
	case 404:
		return CodeNotFound
	case 409:
		return CodeConflict
	case 429:
		return CodeTooManyRequests
	case 408, 502, 503, 504:
		return CodeUnavailable
	}
	if status >= 400 && status < 500 {
		return CodeInvalid
	}
	return CodeInternal
}
