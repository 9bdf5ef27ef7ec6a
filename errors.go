package gpurent

import (
	"errors"
	"fmt"
)

// Code is the closed set of error kinds the system answers with. The API maps
// each code to one HTTP status; callers branch on codes, never on messages.
type Code string

// The error codes. Adding one means adding it to the API's status table too.
const (
	CodeInvalid         Code = "invalid"
	CodeNotFound        Code = "not_found"
	CodeConflict        Code = "conflict"
	CodeUnauthorized    Code = "unauthorized"
	CodeForbidden       Code = "forbidden"
	CodeUnavailable     Code = "unavailable"
	CodePaymentRequired Code = "payment_required"
	CodeInternal        Code = "internal"
)

// Codes lists every code, for tables that must cover all of them.
func Codes() []Code {
	return []Code{CodeInvalid, CodeNotFound, CodeConflict, CodeUnauthorized,
		CodeForbidden, CodeUnavailable, CodePaymentRequired, CodeInternal}
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
