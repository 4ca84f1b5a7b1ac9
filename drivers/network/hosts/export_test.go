package hosts

import (
	"io"

	"github.com/cooprhq/coopr/drivers"
)

// Exchange is exchange, for running the script with a shell of the test's.
var Exchange = exchange

// ErrChanged is what a compare-and-swap that found the file changed gives.
var ErrChanged = errChanged

// SetAfterRead makes d run f between reading /etc/hosts and writing it.
func SetAfterRead(d drivers.Driver, f func()) { d.(*Driver).afterRead = f }

// Runner is the run function Exchange takes.
type Runner = func(script io.Reader, stdout func(string)) error
