package dq;

import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A catalog that is another name for the local session catalog (spark_catalog, Delta).
 *
 * Code written for Unity Catalog reads three-part names such as shop.bronze.orders_raw; open-source
 * Spark has one catalog, so each such catalog name is registered as an alias of it
 * (spark.sql.catalog.shop=dq.CatalogAlias) and shop.bronze.orders_raw is table orders_raw of the
 * local schema bronze. Tables created through the alias are ordinary Delta tables.
 */
public class CatalogAlias extends DelegatingCatalogExtension {
  private String name;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    // Catalogs are loaded lazily, during analysis, where the session is the active one.
    setDelegateCatalog(SparkSession.active().sessionState().catalogManager().catalog("spark_catalog"));
  }

  @Override
  public String name() {
    return name;
  }
}
