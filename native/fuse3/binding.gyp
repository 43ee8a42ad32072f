{
  "targets": [
    {
      "target_name": "orch_fuse3",
      "sources": ["addon.c", "bridge.c", "ops.c"],
      "include_dirs": ["<!@(pkg-config fuse3 --cflags-only-I | sed s/-I//g)"],
      "libraries": ["<!@(pkg-config fuse3 --libs)"],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
    }
  ]
}
