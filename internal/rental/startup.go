package rental

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// The instance's startup command (issue 16): the instance's init runs it
// when the instance starts, and the instance keeps running when it exits.

// CheckStartupCommand refuses a startup command the platform does not
// keep: over gpurent.MaxStartupCommandBytes, a NUL, or not UTF-8. nil (the
// image's own) and "" (none) are fine.
func CheckStartupCommand(c *string) error {
	if c == nil {
		return nil
	}
	switch {
	case len(*c) > gpurent.MaxStartupCommandBytes:
		return gpurent.Errorf(gpurent.CodeInvalid, "startup_command must be at most %d bytes, got %d",
			gpurent.MaxStartupCommandBytes, len(*c))
	case strings.IndexByte(*c, 0) >= 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "startup_command must not contain a NUL byte")
	case !utf8.ValidString(*c):
		return gpurent.Errorf(gpurent.CodeInvalid, "startup_command must be UTF-8 text")
	}
	return nil
}

// DescribeStartupCommand says in words what c runs.
func DescribeStartupCommand(c *string) string {
	switch {
	case c == nil:
		return "the image's own entrypoint and command"
	case *c == "":
		return "none"
	}
	return fmt.Sprintf("%q", *c)
}

// SetStartupCommand changes what the instance's init starts; it applies
// when the instance next starts (a running instance keeps its command
// until then). Only the instance's owner may change it: an operator's
// account is refused as another customer's would be (not found).
func (s *Service) SetStartupCommand(ctx context.Context, acc *gpurent.Account, id string, c *string) (*Detail, error) {
	if err := CheckStartupCommand(c); err != nil {
		return nil, err
	}
	in, err := s.apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if in.AccountID != acc.ID {
			return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", id)
		}
		if !in.Active() {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s: its startup command can no longer change", in.ID, in.State)
		}
		if sameCommand(in.StartupCommand, c) {
			return nil, nil
		}
		if c != nil {
			v := *c
			c = &v
		}
		in.StartupCommand = c
		return NewEvent(in.ID, now, "startup_command", "startup command set to %s; it applies at the next start",
			DescribeStartupCommand(c)), nil
	})
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, in)
}

func sameCommand(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// Bounds of what an agent's report of a startup status may hold: the
// agent is not trusted, and the status is shown to the customer.
const (
	maxStartupArgs     = 64
	maxStartupArgBytes = gpurent.MaxStartupCommandBytes
	maxStartupText     = 512
)

// startupStatus is the status an agent reported, cleaned, with its event
// key; nil when the report holds nothing usable.
func startupStatus(a *agentproto.StartupStatus, now time.Time) *gpurent.StartupStatus {
	if a == nil {
		return nil
	}
	st := &gpurent.StartupStatus{State: a.State, Signal: cleanText(a.Signal, 32), Error: cleanText(a.Error, maxStartupText),
		ReportedAt: now, StartedAt: utcPtr(a.StartedAt), ExitedAt: utcPtr(a.ExitedAt)}
	switch a.State {
	case "none", "running":
		st.ExitedAt, st.Signal, st.Error = nil, "", ""
	case "exited":
		if a.ExitedAt == nil {
			return nil // an exit without its time cannot be told from the next one
		}
		if a.ExitCode != nil {
			c := *a.ExitCode
			st.ExitCode = &c
		}
		st.EventKey = "exited@" + a.ExitedAt.UTC().Format(time.RFC3339Nano)
	case "failed":
		when := a.ExitedAt
		if when == nil {
			when = a.StartedAt
		}
		st.EventKey = "failed@" + st.Error
		if when != nil {
			st.EventKey = "failed@" + when.UTC().Format(time.RFC3339Nano)
		}
	default:
		return nil
	}
	total := 0
	for i, arg := range a.Command {
		if i == maxStartupArgs || total+len(arg) > maxStartupArgBytes {
			st.Command = append(st.Command, "…")
			break
		}
		total += len(arg)
		st.Command = append(st.Command, strings.Map(func(r rune) rune {
			if r == utf8.RuneError || unicode.IsControl(r) {
				return '?' // shown on terminals: no escape sequence passes
			}
			return r
		}, arg))
	}
	return st
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// cleanText keeps at most n bytes of printable text of s.
func cleanText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// StartupSummary says in a line how the startup command stands, "" when
// nothing was reported.
func StartupSummary(st *gpurent.StartupStatus) string {
	if st == nil {
		return ""
	}
	switch st.State {
	case "none":
		return "none"
	case "running":
		if st.StartedAt != nil {
			return "running since " + st.StartedAt.UTC().Format(time.DateTime) + " UTC"
		}
		return "running"
	case "exited":
		how := "exited"
		if st.ExitCode != nil && *st.ExitCode >= 0 {
			how = fmt.Sprintf("exited %d", *st.ExitCode)
		}
		if st.Signal != "" {
			how = "ended by signal " + st.Signal
		}
		if st.ExitedAt != nil {
			how += " at " + st.ExitedAt.UTC().Format(time.DateTime) + " UTC"
		}
		return how + " (the instance keeps running)"
	case "failed":
		return "could not be started: " + st.Error + " (the instance keeps running; change it with `gpurent set-cmd`)"
	}
	return st.State
}

// recordStartup keeps an instance's reported startup status, and records
// its event once per exit or failure, in one transaction.
func (s *Service) recordStartup(ctx context.Context, in *gpurent.Instance, a agentproto.ActualInstance) error {
	if a.Startup == nil || a.State != agentproto.StateRunning || a.AllocationID != in.AllocationID || in.AllocationID == "" {
		return nil
	}
	now := s.now().UTC()
	st := startupStatus(a.Startup, now)
	if st == nil || sameStatus(in.Startup, st) {
		return nil
	}
	return s.store.InTx(ctx, func(q gpurent.Queries) error {
		fresh, err := q.RecordStartupStatus(ctx, in.ID, st)
		if err != nil || !fresh {
			return err
		}
		return q.AddEvent(ctx, NewEvent(in.ID, now, "startup_"+st.State, "startup command %s", StartupSummary(st)))
	})
}

// sameStatus reports whether the stored status says what st says (its
// report time aside): a report that changes nothing writes nothing.
func sameStatus(old, st *gpurent.StartupStatus) bool {
	if old == nil {
		return false
	}
	return old.State == st.State && old.EventKey == st.EventKey && old.Signal == st.Signal && old.Error == st.Error &&
		eqTime(old.StartedAt, st.StartedAt) && eqTime(old.ExitedAt, st.ExitedAt) && eqInt(old.ExitCode, st.ExitCode) &&
		strings.Join(old.Command, "\x00") == strings.Join(st.Command, "\x00")
}

func eqTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

func eqInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// FailedReason is the reason shown for an instance the platform could
// not run, from the agent's message: what happened and what to do.
func FailedReason(msg string) string {
	msg = cleanText(msg, maxStartupText)
	if msg == "" {
		msg = "the host could not run the instance"
	}
	low := strings.ToLower(msg)
	var todo string
	switch {
	case strings.Contains(low, "no such image") || strings.Contains(low, "pull") || strings.Contains(low, "manifest") ||
		strings.Contains(low, "image"):
		todo = "check the image name and tag (and that the operator's registry allows it), then start it again with `gpurent start`, or rent with another image"
	case strings.Contains(low, "out of memory") || strings.Contains(low, "oom"):
		todo = "the instance as a whole ran out of memory: start it again with `gpurent start`, or upgrade to a size with more memory (`gpurent upgrade`)"
	case strings.Contains(low, "crash") || strings.Contains(low, "restart"):
		todo = "the container keeps ending: check the startup command (`gpurent logs`, `gpurent set-cmd`), then start it again with `gpurent start`"
	default:
		todo = "start it again with `gpurent start`; if it fails again, tell the operator the instance ID"
	}
	return msg + "; " + todo + " (not billed after the failure)"
}
