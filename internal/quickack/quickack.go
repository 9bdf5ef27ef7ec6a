// Package quickack speeds up SSH handshakes served to OpenSSH clients. An
// OpenSSH client leaves Nagle's algorithm on until its session starts, and
// the handshake's request-reply rhythm then waits on the server's delayed
// acknowledgements: 40 ms at each of two round trips. Wrap makes the server
// acknowledge every segment at once (TCP_QUICKACK) until the handshake is
// over. Off Linux it changes nothing.
package quickack

import "net"

// Wrap returns nc for the handshake and a func to call when the handshake
// is over (quick acknowledgements then stop).
func Wrap(nc net.Conn) (wrapped net.Conn, done func()) { return wrap(nc) }
