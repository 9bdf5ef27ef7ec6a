// Package transparency renders the public compute transparency report
// (issue #7): the page anyone can open without logging in, in Simplified
// Chinese or English, and the CSV download, both from the one
// apiv1.Transparency value the control plane assembles.
//
// Every GPU type is shown with its official dense spec, the healthy
// reference and the fleet's statistics per probe, then every host with its
// cards, their certification, their latest medians against the fleet
// median and their earlier runs. GPUs are named by HashUUID, never by
// UUID.
//
// The package is pure: it writes to the io.Writer it is given and imports
// only apiv1, the root package (for its error type) and the standard
// library. All page text is escaped by html/template; every UI string
// comes from a per-language table, so a page never mixes languages.
package transparency
