// Package console is the web console: server-rendered pages (html/template,
// embedded templates and assets, a little JavaScript) for customers and
// operators, in Simplified Chinese (the default) and English. It is an
// adapter beside the API: every page calls the same services the API calls,
// with the same account, so authorization has one implementation.
//
// This package only mounts the rooms: Server (made by New from Config)
// serves the static assets, the home redirect and the catch-all 404, and
// registers every route of the customer room (package customer: the
// market, renting, instances, billing, the account, the calculator, and
// sign-in) and of the operator room (package operator: the /ops pages),
// each wrapped by the plumbing of package web: sessions are the auth
// service's login tokens in an HttpOnly cookie; every form carries a CSRF
// token (double submit, checked with the request's origin); logins are
// rate-limited per address and per e-mail (in the customer room's forms).
package console
