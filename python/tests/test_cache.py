"""cache= and cache_limit= of ShardDataset and load_file reach the request
the library reads (capi/cache.go; the Go tests check what the library does
with them against MinIO): the folder from the argument, else
$GDSLOAD_CACHE; the limit as bytes; a limit without a folder refused."""

import os
import unittest
from unittest import mock

import gdsload
from gdsload.dataset import _cache_request


class CacheRequestTest(unittest.TestCase):
    def request(self, **kw):
        return gdsload.ShardDataset("s3://bucket/wds/", **kw)._request(0, 1, None, 0)[0]

    def test_dataset_argument(self):
        with mock.patch.dict(os.environ, {"GDSLOAD_CACHE": "/env/cache"}):
            req = self.request(cache="/nvme/cache", cache_limit="2GiB")
        self.assertEqual(req["cache"], "/nvme/cache")
        self.assertEqual(req["cache_limit"], 2 << 30)
        self.assertEqual(self.request(cache="/nvme/cache", cache_ahead=4)["cache_ahead"], 4)

    def test_environment(self):
        with mock.patch.dict(os.environ, {"GDSLOAD_CACHE": "/env/cache"}):
            self.assertEqual(self.request()["cache"], "/env/cache")
        with mock.patch.dict(os.environ, {}, clear=True):
            req = self.request()
        self.assertNotIn("cache", req)
        self.assertNotIn("cache_limit", req)

    def test_limit_needs_a_folder(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaisesRegex(ValueError, "cache_limit needs"):
                self.request(cache_limit=1 << 30)

    def test_load_options(self):
        req = {"path": "s3://models/m.safetensors", "cache": "/nvme/cache"}
        _cache_request(req, 4096)
        self.assertEqual(req["cache_limit"], 4096)


if __name__ == "__main__":
    unittest.main()
