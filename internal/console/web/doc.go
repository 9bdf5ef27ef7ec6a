// Package web is the console's plumbing, shared by its rooms (the customer
// pages and the operator pages): the page every template sees, rendering
// with the layout, the Chinese and English messages, sessions, CSRF,
// security headers, the error pages and the display of money and times.
// It knows no service: a room's handler calls its services and hands web
// the data to render.
package web
