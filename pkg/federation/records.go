package federation

import bolt "go.etcd.io/bbolt"

// putRecord stores v as key's record in b.
func putRecord(b *bolt.Bucket, key []byte, v any) error { return writeJSONValue(b, key, v) }
