// Command wsecho is a websocket echo server for the port-proxy test: the
// test builds it statically and copies it into a busybox instance.
package main

import (
	"context"
	"net/http"
	"os"

	"github.com/coder/websocket"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			w.Write([]byte("wsecho at " + r.URL.Path + "\n"))
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if err := c.Write(context.Background(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		os.Exit(1)
	}
}
