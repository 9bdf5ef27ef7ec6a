-- The operator's base image catalog (issue 16): curated images in the
-- operator's registry that customers rent by name. versions is a JSON
-- object (framework or library to version: pytorch, cuda, cudnn, python...);
-- gpu_types the GPU type ids the image suits, comma-separated ('' for any).
CREATE TABLE base_images (
    name        TEXT NOT NULL PRIMARY KEY,
    ref         TEXT NOT NULL,
    description TEXT NOT NULL,
    framework   TEXT NOT NULL,
    versions    TEXT NOT NULL,
    min_cuda    TEXT NOT NULL, -- the CUDA version the host's driver must support, '' for none
    gpu_types   TEXT NOT NULL,
    size_bytes  BIGINT NOT NULL,
    prepull     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
-- The images each host's agent reports it holds (pre-pulled or pulled for
-- an instance), replaced whole by each report that lists them.
CREATE TABLE host_images (
    host_id TEXT NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    ref     TEXT NOT NULL,
    PRIMARY KEY (host_id, ref)
);
CREATE INDEX host_images_ref ON host_images (ref);
