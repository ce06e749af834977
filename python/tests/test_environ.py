"""Variables set in os.environ after gdsload was imported reach its loads:
the Go runtime of the shared library takes its environment once, at load,
so credentials or an endpoint fixed in os.environ (after a refused load,
say) must be copied in before each load, as a new boto3 session reads
them."""

import os
import socket
import unittest

import gdsload


class EnvironTest(unittest.TestCase):
    NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL_S3",
             "AWS_EC2_METADATA_DISABLED", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "GDSLOAD_S3_DEADLINE")

    def setUp(self):
        self._saved = {k: os.environ.get(k) for k in self.NAMES}
        os.environ.update({"AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1",
                           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent/config",
                           "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"})
        os.environ.pop("GDSLOAD_S3_DEADLINE", None)

    def tearDown(self):
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def closed_port(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return f"http://127.0.0.1:{port}"

    def test_endpoint_set_after_import(self):
        # Loaded once with the environment as it was, then the endpoint
        # changed: each load names the endpoint of its time.
        for _ in range(2):
            endpoint = self.closed_port()
            os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
            with self.assertRaises(OSError) as cm:
                gdsload.load_file("s3://bucket/model.safetensors")
            self.assertIn(endpoint, str(cm.exception))
            self.assertIn("cannot reach the store", str(cm.exception))

    def test_deadline_variable_set_after_import(self):
        os.environ["AWS_ENDPOINT_URL_S3"] = self.closed_port()
        os.environ["GDSLOAD_S3_DEADLINE"] = "soon"
        with self.assertRaises(Exception) as cm:
            gdsload.load_file("s3://bucket/model.safetensors")
        self.assertIn("GDSLOAD_S3_DEADLINE", str(cm.exception))
        del os.environ["GDSLOAD_S3_DEADLINE"]
        with self.assertRaises(OSError) as cm:
            gdsload.load_file("s3://bucket/model.safetensors")
        self.assertNotIn("GDSLOAD_S3_DEADLINE", str(cm.exception), "an unset variable is unset for the next load")


if __name__ == "__main__":
    unittest.main()
