// Package mail sends the control plane's e-mail to customers (today the
// password-reset links) through the operator's SMTP server, configured by
// one URL:
//
//	smtp://[user[:password]@]host[:port]?from=ADDRESS[&tls=required][&ca=FILE]
//	smtps://[user[:password]@]host[:port]?from=ADDRESS[&ca=FILE]
//
// smtp:// (port 587 by default) upgrades with STARTTLS whenever the server
// offers it, and with tls=required refuses a server that does not; smtps://
// (port 465) speaks TLS from the first byte. A password is only ever sent
// over TLS, or to a server on loopback. ca names a PEM file of the
// certificate authorities to trust instead of the system's (a private
// relay). Messages are plain text in UTF-8.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	netmail "net/mail"
	"net/smtp"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// defaultTimeout bounds one delivery when the caller's context has no
// deadline.
const defaultTimeout = 30 * time.Second

// Sender delivers messages through one SMTP server. It is safe for
// concurrent use: each Send is its own connection.
type Sender struct {
	addr     string // host:port
	host     string
	implicit bool // smtps
	required bool // tls=required
	user     string
	password string
	from     *netmail.Address
	roots    *x509.CertPool // nil: the system's
	now      func() time.Time
}

// New parses the URL (see the package comment) and checks what it names;
// it does not connect.
func New(rawURL string) (*Sender, error) {
	bad := func(format string, args ...any) (*Sender, error) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "mail server URL: "+format, args...)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not the URL itself: it may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad("%v", err)
	}
	s := &Sender{now: time.Now}
	port := "587"
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.implicit, port = true, "465"
	default:
		return bad("scheme %q: want smtp:// or smtps://", u.Scheme)
	}
	if u.Hostname() == "" {
		return bad("no host")
	}
	if u.Path != "" && u.Path != "/" {
		return bad("unexpected path %q", u.Path)
	}
	s.host = u.Hostname()
	if p := u.Port(); p != "" {
		port = p
	}
	s.addr = net.JoinHostPort(s.host, port)
	if u.User != nil {
		s.user = u.User.Username()
		s.password, _ = u.User.Password()
	}
	q := u.Query()
	for key := range q {
		switch key {
		case "from", "tls", "ca":
		default:
			return bad("unknown parameter %q (from, tls, ca)", key)
		}
	}
	if q.Get("from") == "" {
		return bad("from=ADDRESS is required (the sender's address)")
	}
	if s.from, err = netmail.ParseAddress(q.Get("from")); err != nil {
		return bad("from %q: %v", q.Get("from"), err)
	}
	switch q.Get("tls") {
	case "":
	case "required":
		s.required = true
	default:
		return bad("tls=%q: the only setting is tls=required", q.Get("tls"))
	}
	if ca := q.Get("ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return bad("ca: %v", err)
		}
		s.roots = x509.NewCertPool()
		if !s.roots.AppendCertsFromPEM(pem) {
			return bad("ca: %s holds no PEM certificate", ca)
		}
	}
	return s, nil
}

// From is the sender's address.
func (s *Sender) From() string { return s.from.String() }

// Send delivers a plain-text message to one address. A bad address or a
// header that would carry a line break is refused before connecting.
func (s *Sender) Send(ctx context.Context, to, subject, body string) error {
	rcpt, err := netmail.ParseAddress(to)
	if err != nil {
		return gpurent.Errorf(gpurent.CodeInvalid, "recipient %q: %v", to, err)
	}
	msg, err := s.compose(rcpt, subject, body)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	if err := s.deliver(ctx, rcpt.Address, msg); err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "send mail to %s through %s", rcpt.Address, s.addr)
	}
	return nil
}

// compose builds the message: RFC 5322 headers (the subject encoded for
// UTF-8) and a base64 body.
func (s *Sender) compose(to *netmail.Address, subject, body string) ([]byte, error) {
	if strings.ContainsAny(subject, "\r\n") {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a mail subject cannot contain a line break")
	}
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	domain := s.from.Address[strings.LastIndexByte(s.from.Address, '@')+1:]
	var b bytes.Buffer
	header := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	header("From", s.from.String())
	header("To", to.String())
	header("Subject", mime.BEncoding.Encode("UTF-8", subject))
	header("Date", s.now().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=UTF-8")
	header("Content-Transfer-Encoding", "base64")
	b.WriteString("\r\n")
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	enc := base64.StdEncoding.EncodeToString([]byte(body))
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return b.Bytes(), nil
}

// deliver runs one SMTP session, bounded by ctx.
func (s *Sender) deliver(ctx context.Context, rcpt string, msg []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	tlsConfig := &tls.Config{ServerName: s.host, RootCAs: s.roots, MinVersion: tls.VersionTLS12}
	if s.implicit {
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		return err
	}
	defer c.Close()
	if !s.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return err
			}
		} else if s.required {
			return fmt.Errorf("the server does not offer STARTTLS and the URL says tls=required")
		}
	}
	if s.user != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("the server offers no AUTH and the URL names a user")
		}
		// PlainAuth itself refuses to send the password in clear to
		// anything but loopback.
		if err := c.Auth(smtp.PlainAuth("", s.user, s.password, s.host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
