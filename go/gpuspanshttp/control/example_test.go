package control_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
)

// An operator turns kernel spans on in a running server, with the token
// the endpoints require.
func Example() {
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelStep})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	control.Register(mux, hub, control.Options{Token: "s3cret"})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, body := range []string{"kernel", "loud"} {
		req, err := http.NewRequest(http.MethodPut, srv.URL+control.LevelPath, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		reply, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("PUT %q: %d %s", body, resp.StatusCode, reply)
	}
	fmt.Println("level now:", hub.Level())
	// Output:
	// PUT "kernel": 200 kernel
	// PUT "loud": 400 bad level "loud": want off, step or kernel
	// level now: kernel
}
