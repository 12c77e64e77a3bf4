package schemacheck

import (
	"encoding/json"
	"io"
)

// jsonDecoder reads numbers as json.Number, as the validator wants them.
func jsonDecoder(r io.Reader) *json.Decoder {
	d := json.NewDecoder(r)
	d.UseNumber()
	return d
}
