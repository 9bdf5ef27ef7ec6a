// Package delta copies a directory tree from one host to another over a
// single bidirectional byte stream, incrementally, the way rsync does: a
// second pass moves only what changed since the first. It is the data path of
// cross-host migration (issue #5): pre-copy passes run while the instance
// keeps writing, then the instance stops and a final pass moves the rest, so
// the downtime depends on what changed, not on the size of the data.
//
// Send runs on the source host and Receive on the destination host, each with
// one end of the stream (a TCP connection, an SSH channel, net.Pipe in
// tests). The protocol, version 1, is framed: every message is a one-byte
// type, a four-byte big-endian payload length and the payload (at most
// maxFrame bytes), integers are varints. The conversation is:
//
//	S→R  hello (magic, version)          R→S  hello (magic, version)
//	S→R  entry ... listEnd               the whole source tree: path, kind,
//	                                     mode, uid, gid, size, mtime, rdev,
//	                                     symlink target, hard link, xattrs
//	R→S  request [sums ...] ... reqEnd   one request per regular file whose
//	                                     size or mtime differ at the
//	                                     destination, with the block
//	                                     signatures of the file it has there
//	S→R  fileBegin (literal|copy)* fileEnd, or fileSkip, per request, then
//	     deltaEnd
//	R→S  done (the receiver's counts)
//
// Requests and answers are pipelined: the receiver computes signatures while
// it applies earlier answers. Either side may send abort with a message
// instead of its next message. A version mismatch, a malformed frame, a path
// that is absolute, contains "..", or would pass through a symbolic link is
// refused with an error of code invalid.
//
// Block signatures are rsync's: a rolling weak checksum (two 16-bit sums,
// Adler-32-like) and the first 16 bytes of SHA-256 per block, the block size
// the square root of the file size rounded to KiB and bounded to 2..128 KiB.
// Every rebuilt file is checked against the SHA-256 of the whole source file
// before it replaces the old one.
//
// Both sides reach files only through directory file descriptors opened
// component by component with O_NOFOLLOW (openat and friends), so neither a
// hostile peer nor a symlink swapped in by a running container can make them
// read or write outside their root. Symbolic links are copied as links and
// never followed.
//
// The receiver rebuilds each file into a temporary file in the same
// directory, sets owner, xattrs, mode and mtime, fsyncs it and renames it over
// the old one; directories whose entries changed are fsynced at the end.
// These file types are kept: regular files, directories, symlinks, hard links
// within the tree, FIFOs, sockets and overlayfs whiteouts (character device
// 0/0); other device nodes are refused (the receiver runs as root on the
// host) and counted in Stats.DevicesSkipped; and the xattrs user.*, trusted.* (for
// overlayfs: trusted.overlay.opaque and friends), security.capability and
// POSIX ACLs. Xattrs the destination filesystem refuses are counted in
// Stats.XattrsSkipped.
//
// A live pass (Options.Final false) cannot be sure that a file read while the
// instance writes it is complete: a write in the same clock tick as the read
// leaves the mtime unchanged. Such files (changed while read, or modified less
// than a second before) get an mtime one nanosecond off the source's at the
// destination, so the next pass compares them unequal and sends them again.
// The final pass, with the source stopped, sets Final and copies mtimes
// exactly. Like rsync's quick check, a file whose content changed while its
// size and mtime were kept (an explicit utimes to the old value) is not seen
// as changed.
package delta
