// Package browser holds the console's tests in a real headless Chromium,
// driven from Go with chromedp, against a whole control plane with agents
// of fake GPUs: the customer's and the operator's journeys in both
// languages, and what another customer may not see. Screenshots go to
// $GPURENT_SCREENSHOTS when it names a directory (docs/screenshots holds a
// set, referenced from the README).
package browser
