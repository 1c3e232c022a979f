package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

// tickWriter rewrites the tick file after each committed call. A tick that
// cannot be written never fails the call (the message is stored; only
// watchers lose a hint), so it is reported once on stderr and then ignored.
func tickWriter(path string) func(store.Change) {
	var once sync.Once
	return func(c store.Change) {
		if err := wake.WriteTick(path, c); err != nil {
			once.Do(func() {
				fmt.Fprintf(os.Stderr, "mcpp-chat: %v — watchers will only notice changes by polling; fix the folder's permissions or set chat.tick_file: \"\"\n", err)
			})
		}
	}
}
