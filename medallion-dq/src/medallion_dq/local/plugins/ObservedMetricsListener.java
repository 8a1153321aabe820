package dq;

import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
 *
 * It also keeps, in the folder PATH.running, a file named after each Spark Connect session that has
 * an execution running. A canceled update's flows go on with the jobs they start after the cancel;
 * the runner waits for its session's file to go before it puts the update's tables back.
 * Enable with spark.extraListeners=dq.ObservedMetricsListener and spark.dq.metricsFile=PATH.
 */
public class ObservedMetricsListener extends SparkListener {
  private static final Pattern SESSION =
      Pattern.compile("^SparkConnect_OperationTag_.*_Session_([0-9a-f-]+)_Operation_");
  private final String path;
  private final File running;
  private final Map<Long, Long> roots = new ConcurrentHashMap<>();
  private final Map<Long, String> sessions = new ConcurrentHashMap<>();
  private final Map<String, Integer> active = new ConcurrentHashMap<>();

  public ObservedMetricsListener(SparkConf conf) {
    path = conf.get("spark.dq.metricsFile", "");
    running = new File(path + ".running");
    File[] left = path.isEmpty() ? null : running.listFiles(); // an earlier server's: not running
    for (File file : left == null ? new File[0] : left) file.delete();
  }

  /** Count an execution of a Connect session in or out; its file exists while the count is > 0. */
  private synchronized void count(String session, int step) {
    int now = active.merge(session, step, Integer::sum);
    File file = new File(running, session);
    try {
      if (now <= 0) {
        active.remove(session);
        file.delete();
      } else if (now == step) {
        running.mkdirs();
        file.createNewFile();
      }
    } catch (IOException error) {
      System.err.println("dq listener: cannot write " + file + ": " + error);
    }
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (path.isEmpty()) return;
    if (event instanceof SparkListenerSQLExecutionStart) {
      SparkListenerSQLExecutionStart start = (SparkListenerSQLExecutionStart) event;
      Object root = start.rootExecutionId().isDefined() ? start.rootExecutionId().get() : start.executionId();
      roots.put(start.executionId(), (Long) root);
      scala.collection.Iterator<String> tags = start.jobTags().iterator();
      while (tags.hasNext()) {
        Matcher session = SESSION.matcher(tags.next());
        if (session.find()) {
          sessions.put(start.executionId(), session.group(1));
          count(session.group(1), 1);
          break;
        }
      }
      return;
    }
    if (!(event instanceof SparkListenerSQLExecutionEnd)) return;
    SparkListenerSQLExecutionEnd end = (SparkListenerSQLExecutionEnd) event;
    Long root = roots.remove(end.executionId());
    String session = sessions.remove(end.executionId());
    if (session != null) count(session, -1);
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
