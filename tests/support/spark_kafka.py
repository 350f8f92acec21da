"""Spark's own Kafka connector (`spark-sql-kafka-0-10`) for the Structured Streaming tests.

The connector and what it needs beyond Spark (kafka-clients, commons-pool2, the
token provider) are pinned in tests/spark-kafka/pom.xml and resolved from Maven
Central by `.ci/run` (or here, once, when it did not run). Jars pyspark already
carries (Scala, Hadoop's client, compression codecs) are left out, so Spark's own
versions stay the only ones on the classpath.

Maven Central serves no Spark 4.3.0 artifacts (not even spark-sql_2.13) while PyPI
serves pyspark 4.3.0; the pom pins the newest connector there is (4.2.0), and the
streaming tests show it working with the installed pyspark.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

POM_DIR = Path(__file__).resolve().parent.parent / "spark-kafka"
CLASSPATH_FILE = POM_DIR / "target" / "classpath.txt"
_VERSIONED = re.compile(r"-\d[^-]*(?:-[A-Za-z0-9.]+)?\.jar$")


def _artifact(jar: str) -> str:
    """`kafka-clients` for .../kafka-clients-3.9.2.jar."""
    return _VERSIONED.sub("", os.path.basename(jar))


def connector_jars() -> list[str]:
    """The jars to hand to Spark (spark.jars) for format("kafka"), resolving them with mvn
    when `.ci/run` did not."""
    pom = POM_DIR / "pom.xml"
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < pom.stat().st_mtime:
        mvn = shutil.which("mvn")
        assert mvn, "mvn is needed to resolve Spark's Kafka connector (tests/spark-kafka/pom.xml)"
        subprocess.run([mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath",
                        f"-Dmdep.outputFile={CLASSPATH_FILE}", "-Dmdep.includeScope=runtime"],
                       check=True, capture_output=True, timeout=900)
    import pyspark

    have = {_artifact(j) for j in os.listdir(Path(pyspark.__file__).resolve().parent / "jars")}
    jars = [j for j in CLASSPATH_FILE.read_text().strip().split(os.pathsep) if j and _artifact(j) not in have]
    assert any("spark-sql-kafka-0-10" in j for j in jars), jars
    return jars
