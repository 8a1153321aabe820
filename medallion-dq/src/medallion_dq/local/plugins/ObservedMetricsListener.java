package dq;

import java.io.FileWriter;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart;

/**
 * Appends the metrics of every "dq:" observation to a JSON-lines file.
 *
 * The open-source pipeline engine does not hand observed metrics to its client, but each flow
 * execution (a materialized-view refresh, a streaming micro-batch) ends with a
 * SparkListenerSQLExecutionEnd that carries them. Failed executions are skipped: a failing update
 * records no metrics. A streaming micro-batch runs nested executions that report the same
 * observation, so each line names its root execution and readers count one per root.
 * Enable with spark.extraListeners=dq.ObservedMetricsListener and spark.dq.metricsFile=PATH.
 */
public class ObservedMetricsListener extends SparkListener {
  private final String path;
  private final Map<Long, Long> roots = new ConcurrentHashMap<>();

  public ObservedMetricsListener(SparkConf conf) {
    path = conf.get("spark.dq.metricsFile", "");
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (path.isEmpty()) return;
    if (event instanceof SparkListenerSQLExecutionStart) {
      SparkListenerSQLExecutionStart start = (SparkListenerSQLExecutionStart) event;
      Object root = start.rootExecutionId().isDefined() ? start.rootExecutionId().get() : start.executionId();
      roots.put(start.executionId(), (Long) root);
      return;
    }
    if (!(event instanceof SparkListenerSQLExecutionEnd)) return;
    SparkListenerSQLExecutionEnd end = (SparkListenerSQLExecutionEnd) event;
    Long root = roots.remove(end.executionId());
    if (end.executionFailure().isDefined() || end.qe() == null) return;
    Map<String, Row> metrics;
    try {
      metrics = scala.jdk.javaapi.CollectionConverters.asJava(end.qe().observedMetrics());
    } catch (Throwable notAnalysable) {
      return;
    }
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, Row> e : metrics.entrySet()) {
      if (!e.getKey().startsWith("dq:")) continue;
      String name = e.getKey().replace("\\", "\\\\").replace("\"", "\\\"");
      out.append("{\"observation\":\"").append(name)
          .append("\",\"execution_id\":").append(end.executionId())
          .append(",\"root_execution_id\":").append(root == null ? end.executionId() : root)
          .append(",\"time_ms\":").append(end.time())
          .append(",\"metrics\":").append(e.getValue().json()).append("}\n");
    }
    if (out.length() == 0) return;
    synchronized (ObservedMetricsListener.class) {
      try (FileWriter writer = new FileWriter(path, true)) {
        writer.write(out.toString());
      } catch (IOException error) {
        System.err.println("dq listener: cannot write " + path + ": " + error);
      }
    }
  }
}
