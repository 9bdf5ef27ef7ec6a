package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStat is what the runtime needs from /proc/<pid>/stat.
type procStat struct {
	state      byte   // R, S, D, Z, X, ...
	session    int    // session id
	startTicks uint64 // start time in clock ticks after boot
}

// readProcStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
func readProcStat(procRoot string, pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat: no ')'")
	}
	// After ')': field 3 (state) is rest[0], field 6 (session) rest[3],
	// field 22 (starttime) rest[19].
	rest := strings.Fields(string(b[i+1:]))
	if len(rest) < 20 || len(rest[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed stat: %d fields", len(rest))
	}
	session, err := strconv.Atoi(rest[3])
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat session: %w", err)
	}
	start, err := strconv.ParseUint(rest[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat starttime: %w", err)
	}
	return procStat{state: rest[0][0], session: session, startTicks: start}, nil
}

// readBootID returns this boot's random id, so records from an earlier boot
// (where the same pid and start time could recur) are never taken as live.
func readBootID(procRoot string) (string, error) {
	b, err := os.ReadFile(procRoot + "/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// alive reports whether the process p recorded is still the one running:
// same boot, same pid, same start time, and not a zombie.
func (r *Runtime) alive(p *procRecord) bool {
	if p == nil || p.PID <= 0 || p.BootID != r.bootID {
		return false
	}
	st, err := readProcStat(r.procRoot, p.PID)
	if err != nil || st.startTicks != p.StartTicks {
		return false
	}
	return st.state != 'Z' && st.state != 'X' && st.state != 'x'
}
