// Package console is the web console: server-rendered pages (html/template,
// embedded templates and assets, a little JavaScript) for customers and
// operators, in Simplified Chinese (the default) and English. It is an
// adapter beside the API: every page calls the same services the API calls,
// with the same account, so authorization has one implementation. Sessions
// are the auth service's login tokens in an HttpOnly cookie; every form
// carries a CSRF token (double submit, checked with the request's origin);
// logins are rate-limited per address and per e-mail.
package console
