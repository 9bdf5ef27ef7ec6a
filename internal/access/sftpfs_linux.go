//go:build linux

package access

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"
)

// errNotServed refuses a device node, fifo or socket: sftp serves only
// regular files, directories and symbolic links.
var errNotServed = errors.New("not a regular file: sftp serves only regular files, directories and symbolic links")

// sftpFS is the helper's file system for the sftp request server: the
// helper's own root (inside the instance, its container's root). It opens
// regular files only: a path is first opened O_PATH, which opens no
// device, its type checked on that descriptor, and only a regular file is
// then opened for reading or writing (through /proc/self/fd, the same
// inode). A new file is created O_EXCL, so a create never opens something
// that was already there.
type sftpFS struct{}

func (sftpFS) handlers() sftp.Handlers {
	fs := sftpFS{}
	return sftp.Handlers{FileGet: fs, FilePut: fs, FileCmd: fs, FileList: fs}
}

// openRegular opens path (following symbolic links) with flag, refusing
// anything but a regular file before it is opened for I/O.
func openRegular(path string, flag int, perm uint32) (*os.File, error) {
	flag |= unix.O_CLOEXEC | unix.O_NOCTTY
	for range 3 {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && flag&unix.O_CREAT != 0 {
			// Absent: create it, and only it. A dangling symbolic link
			// is refused (EEXIST) rather than followed.
			fd, err := unix.Open(path, flag|unix.O_EXCL|unix.O_NOFOLLOW, perm)
			if errors.Is(err, unix.EEXIST) && flag&unix.O_EXCL == 0 {
				continue // made meanwhile: look again
			}
			if err != nil {
				return nil, &os.PathError{Op: "open", Path: path, Err: err}
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		if flag&unix.O_EXCL != 0 {
			_ = unix.Close(pfd)
			return nil, &os.PathError{Op: "open", Path: path, Err: unix.EEXIST}
		}
		f, err := reopenRegular(pfd, path, flag&^(unix.O_CREAT|unix.O_EXCL))
		_ = unix.Close(pfd)
		return f, err
	}
	return nil, &os.PathError{Op: "open", Path: path, Err: unix.EEXIST}
}

// reopenRegular opens the file that the O_PATH descriptor pfd holds, once
// it is known to be a regular file.
func reopenRegular(pfd int, path string, flag int) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if flag&(unix.O_WRONLY|unix.O_RDWR) != 0 {
			return nil, &os.PathError{Op: "open", Path: path, Err: unix.EISDIR}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotServed}
	default:
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotServed}
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), flag, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// The same inode as pfd: still a regular file. Checked again all the
	// same, on what was opened.
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotServed}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func (sftpFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	return openRegular(r.Filepath, unix.O_RDONLY, 0)
}

func (sftpFS) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	return openRegular(r.Filepath, openFlags(r.Pflags())&^unix.O_RDWR|unix.O_WRONLY, 0o644)
}

// OpenFile serves an open for reading and writing.
func (sftpFS) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	return openRegular(r.Filepath, openFlags(r.Pflags()), 0o644)
}

// openFlags maps an sftp open's flags. Append is left out: the request
// server writes at offsets, which O_APPEND would break (clients send the
// offset of the end themselves).
func openFlags(p sftp.FileOpenFlags) int {
	flag := unix.O_RDONLY
	switch {
	case p.Read && (p.Write || p.Append):
		flag = unix.O_RDWR
	case p.Write || p.Append:
		flag = unix.O_WRONLY
	}
	if p.Creat {
		flag |= unix.O_CREAT
	}
	if p.Trunc {
		flag |= unix.O_TRUNC
	}
	if p.Excl {
		flag |= unix.O_EXCL
	}
	return flag
}

func (sftpFS) Filecmd(r *sftp.Request) error {
	switch r.Method {
	case "Setstat":
		return setstat(r)
	case "Rename":
		// sftp's rename does not replace an existing target.
		if _, err := os.Lstat(r.Target); err == nil {
			return &os.LinkError{Op: "rename", Old: r.Filepath, New: r.Target, Err: unix.EEXIST}
		}
		return os.Rename(r.Filepath, r.Target)
	case "Rmdir":
		return syscall.Rmdir(r.Filepath)
	case "Remove":
		return syscall.Unlink(r.Filepath)
	case "Mkdir":
		return os.Mkdir(r.Filepath, 0o755)
	case "Symlink":
		// Filepath is the link's target (as given), Target the new link.
		return os.Symlink(r.Filepath, r.Target)
	case "Link":
		// A hard link to a regular file only: never a second name for
		// a node the server would not open.
		st, err := os.Lstat(r.Filepath)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return &os.PathError{Op: "link", Path: r.Filepath, Err: errNotServed}
		}
		return os.Link(r.Filepath, r.Target)
	}
	return sftp.ErrSSHFxOpUnsupported
}

// PosixRename replaces the target (posix-rename@openssh.com).
func (sftpFS) PosixRename(r *sftp.Request) error {
	return os.Rename(r.Filepath, r.Target)
}

func setstat(r *sftp.Request) error {
	flags, attrs := r.AttrFlags(), r.Attributes()
	if flags.Size {
		// Truncating opens the file: a regular file only.
		f, err := openRegular(r.Filepath, unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Truncate(int64(attrs.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if flags.Permissions {
		if err := os.Chmod(r.Filepath, os.FileMode(attrs.Mode&0o777)|unixModeBits(attrs.Mode)); err != nil {
			return err
		}
	}
	if flags.UidGid {
		if err := os.Chown(r.Filepath, int(attrs.UID), int(attrs.GID)); err != nil {
			return err
		}
	}
	if flags.Acmodtime {
		if err := os.Chtimes(r.Filepath, time.Unix(int64(attrs.Atime), 0), time.Unix(int64(attrs.Mtime), 0)); err != nil {
			return err
		}
	}
	return nil
}

// unixModeBits maps setuid, setgid and sticky of a POSIX mode.
func unixModeBits(mode uint32) os.FileMode {
	var m os.FileMode
	if mode&unix.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= os.ModeSticky
	}
	return m
}

func (sftpFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	switch r.Method {
	case "List":
		f, err := os.Open(r.Filepath)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		infos, err := f.Readdir(-1) // lstat of each entry
		if err != nil {
			return nil, err
		}
		return listerAt(infos), nil
	case "Stat":
		st, err := os.Stat(r.Filepath)
		if err != nil {
			return nil, err
		}
		return listerAt{st}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// Lstat serves lstat without following the last symbolic link.
func (sftpFS) Lstat(r *sftp.Request) (sftp.ListerAt, error) {
	st, err := os.Lstat(r.Filepath)
	if err != nil {
		return nil, err
	}
	return listerAt{st}, nil
}

// Readlink answers a symbolic link's target as written.
func (sftpFS) Readlink(path string) (string, error) {
	return os.Readlink(path)
}

// StatVFS serves statvfs@openssh.com (sftp's df).
func (sftpFS) StatVFS(r *sftp.Request) (*sftp.StatVFS, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.Filepath, &st); err != nil {
		return nil, &os.PathError{Op: "statvfs", Path: r.Filepath, Err: err}
	}
	return &sftp.StatVFS{
		Bsize: uint64(st.Bsize), Frsize: uint64(st.Frsize),
		Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree, Favail: st.Ffree,
		Fsid: uint64(uint32(st.Fsid.Val[0]))<<32 | uint64(uint32(st.Fsid.Val[1])), Flag: uint64(st.Flags), Namemax: uint64(st.Namelen),
	}, nil
}

type listerAt []os.FileInfo

func (l listerAt) ListAt(out []os.FileInfo, offset int64) (int, error) {
	if offset >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[offset:])
	if n < len(out) {
		return n, io.EOF
	}
	return n, nil
}
