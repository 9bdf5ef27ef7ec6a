// Package staticexe checks that an executable can run inside any image: a
// Linux ELF file without an interpreter (a dynamically linked one needs
// the host's libc and loader, which an image may lack). The agent copies
// or mounts such a gpurent build into instances: their init (PID 1) and
// their sftp helper.
package staticexe

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrDynamic is the answer for an ELF executable with an interpreter.
var ErrDynamic = errors.New("dynamically linked (it needs the host's libraries, which an image may lack)")

// Check fails unless r holds an ELF executable without an interpreter.
func Check(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("not an executable (ELF type %s)", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return ErrDynamic
		}
	}
	return nil
}

// CheckFile is Check of the file at path.
func CheckFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Check(f)
}

// Hint is what to tell an operator whose gpurent binary is not static.
const Hint = "build gpurent with CGO_ENABLED=0, as `make build` does"
